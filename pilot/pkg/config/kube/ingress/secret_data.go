package ingress

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

var _ model.SecretDataStore = (*Secrets)(nil)

// SecretData returns the data of Secret namespace/name from the informer's
// cache, for the CA bundles (ca.crt, ca.crl) that verify client
// certificates. The map is the cache's: callers must not modify it.
func (s *Secrets) SecretData(namespace, name string) (map[string][]byte, bool) {
	l, found := s.listers[namespace]
	if !found {
		l, found = s.listers[""]
	}
	if !found {
		return nil, false
	}
	sec, err := l.Secrets(namespace).Get(name)
	if err != nil {
		return nil, false
	}
	return sec.Data, true
}

// tlsMaterial is what a Secret holds that gateways use: a certificate and
// key, and a CA bundle with its CRL.
type tlsMaterial struct {
	cert, key, ca, crl []byte
	hasPair, hasCA     bool
}

func materialOf(obj any) tlsMaterial {
	if t, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		obj = t.Obj
	}
	sec, isSecret := obj.(*corev1.Secret)
	if !isSecret {
		return tlsMaterial{}
	}
	var m tlsMaterial
	m.cert, m.key, m.hasPair = model.TLSKeyPair(sec.Data)
	m.ca, m.crl, m.hasCA = model.CABundle(sec.Data)
	return m
}

// tlsMaterialChanged reports whether a Secret event changes what gateways
// use: a certificate and key or a CA bundle (and CRL) that appears,
// changes or goes. Other Secrets (tokens, Helm releases) and metadata-only
// updates do not.
func tlsMaterialChanged(old, cur any) bool {
	o, n := materialOf(old), materialOf(cur)
	if !o.hasPair && !n.hasPair && !o.hasCA && !n.hasCA {
		return false
	}
	return o.hasPair != n.hasPair || o.hasCA != n.hasCA ||
		!bytes.Equal(o.cert, n.cert) || !bytes.Equal(o.key, n.key) ||
		!bytes.Equal(o.ca, n.ca) || !bytes.Equal(o.crl, n.crl)
}
