package core

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// selfSigned returns a PEM CA certificate and its PEM key.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<33, 0), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}

type secretData map[string]map[string][]byte

func (d secretData) Secret(ns, name string) ([]byte, []byte, bool) {
	v := d[ns+"/"+name]
	return v["tls.crt"], v["tls.key"], len(v["tls.crt"]) > 0 && len(v["tls.key"]) > 0
}

func (d secretData) SecretData(ns, name string) (map[string][]byte, bool) {
	v, ok := d[ns+"/"+name]
	return v, ok
}

// DestinationRule credentials become the SDS secrets the clusters name,
// read from the proxy's namespace: the client certificate of MUTUAL, the
// CA unless insecureSkipVerify; a missing Secret is reported at the field.
func TestBuildUpstreamSecrets(t *testing.T) {
	cert, key := selfSigned(t)
	push := pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: partner, namespace: default}
spec:
  host: partner.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: client}
  subsets:
  - name: v1
    trafficPolicy:
      portLevelSettings:
      - port: {number: 443}
        tls: {mode: SIMPLE, credentialName: missing}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: skip, namespace: default}
spec:
  host: skip.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: nocheck, insecureSkipVerify: true}
`)
	store := secretData{
		"gw/client":         {"tls.crt": cert, "tls.key": key, "ca.crt": cert},
		"gw/nocheck":        {"tls.crt": cert, "tls.key": key},
		"other/missing":     {"ca.crt": cert},
		"default/client":    {"tls.crt": []byte("not this one")},
		"gw/unused-cacert":  {"ca.crt": cert},
		"gw/missing-cacert": {"cacert": []byte("not PEM")},
	}
	gw := model.SecretScope{Identity: &model.Identity{Namespace: "gw", ServiceAccount: "ingress"}}
	secrets, refused, errs := BuildUpstreamSecrets(push, store, gw)
	var names []string
	for _, s := range secrets {
		names = append(names, s.GetName())
		if err := s.ValidateAll(); err != nil {
			t.Errorf("%s: %v", s.GetName(), err)
		}
	}
	if got := strings.Join(names, " "); got != "kubernetes://client kubernetes://client-cacert kubernetes://nocheck" {
		t.Errorf("secrets %s", got)
	}
	if string(secrets[1].GetValidationContext().GetTrustedCa().GetInlineBytes()) != string(cert) {
		t.Error("CA of client-cacert")
	}
	if len(errs) != 1 || errs[0].Key.Name != "partner" || errs[0].Field != "spec.subsets[0].trafficPolicy.portLevelSettings[0].tls.credentialName" ||
		!strings.Contains(errs[0].Message, "gw/missing-cacert is not usable") {
		t.Errorf("errors %v", errs)
	}
	if len(refused) != 0 {
		t.Errorf("refusals for the proxies' own namespace: %+v", refused)
	}

	// Proxies of another namespace read that namespace's Secrets (its
	// own "missing" holds a CA), and the gw Secrets are never theirs.
	other := model.SecretScope{Identity: &model.Identity{Namespace: "other", ServiceAccount: "ingress"}}
	secrets, _, _ = BuildUpstreamSecrets(push, store, other)
	if len(secrets) != 1 || secrets[0].GetName() != "kubernetes://missing-cacert" {
		t.Errorf("proxies of namespace other got %v, want their own missing-cacert only", secrets)
	}
	// Unauthenticated proxies get none, each refused and reported, and
	// nothing is read for them.
	secrets, refused, errs = BuildUpstreamSecrets(push, nil, model.SecretScope{})
	if len(secrets) != 0 || len(refused) != 4 || refused[0].DestinationRule != "default/partner" ||
		refused[0].Field != "spec.trafficPolicy.tls.credentialName" || refused[0].Resource != "kubernetes://client" ||
		!strings.Contains(refused[0].Reason, "only sent to authenticated proxies") || len(errs) != 4 {
		t.Errorf("plaintext: secrets %d, refused %+v, errors %v", len(secrets), refused, errs)
	}
}

// A DestinationRule credential naming a namespace never reaches the
// proxies, whatever RBAC lets their ServiceAccount get (istiod's rule:
// Istio config names Secrets of the proxy's namespace only): the cluster
// builder reports it and builds no cluster presenting it, so a tenant's
// DestinationRule cannot borrow a Secret the gateway is served for
// another object's sake under the same name (an Ingress's, a Gateway's
// lent by a ReferenceGrant). The proxy's own namespace's Secret needs the
// namespace review (list, or get on it).
func TestBuildUpstreamSecretsCrossNamespace(t *testing.T) {
	cert, key := selfSigned(t)
	push := pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: partner, namespace: default}
spec:
  host: partner.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: apps/client, insecureSkipVerify: true}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: lent, namespace: default}
spec:
  host: lent.example.com
  trafficPolicy:
    tls: {mode: SIMPLE, credentialName: "kubernetes-gateway://apps/client"}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: own, namespace: default}
spec:
  host: own.example.com
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: own-client, insecureSkipVerify: true}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: upstreams, namespace: default}
spec:
  hosts: [partner.example.com, lent.example.com, own.example.com]
  ports: [{number: 443, name: https, protocol: HTTPS}]
  resolution: DNS
`)
	store := secretData{"apps/client": {"tls.crt": cert, "tls.key": key, "ca.crt": cert}, "gw/own-client": {"tls.crt": cert, "tls.key": key}}
	id := &model.Identity{Namespace: "gw", ServiceAccount: "ingress"}
	for _, allow := range []bool{false, true} {
		scope := model.SecretScope{Identity: id, Authorizer: authorizerFunc(func(model.Identity, model.SecretRef) (bool, string) { return allow, "test" })}
		secrets, refused, _ := BuildUpstreamSecrets(push, store, scope)
		var names []string
		for _, s := range secrets {
			names = append(names, s.GetName())
		}
		if want := map[bool]string{false: "[]", true: "[kubernetes://own-client]"}[allow]; fmt.Sprint(names) != want {
			t.Errorf("RBAC allows %v: secrets %v, want %v", allow, names, want)
		}
		for _, r := range refused {
			if r.Secret != "gw/own-client" || !strings.Contains(r.Reason, "may neither list the Secrets of namespace gw") {
				t.Errorf("RBAC allows %v: refusal %+v", allow, r)
			}
		}
		if len(refused) != map[bool]int{false: 1, true: 0}[allow] {
			t.Errorf("RBAC allows %v: refusals %+v", allow, refused)
		}
	}
	svc := BuildServices(push)
	reported := 0
	for _, e := range svc.Errors {
		if (e.Key.Name == "partner" || e.Key.Name == "lent") && strings.Contains(e.Message, "names a namespace") {
			reported++
		}
	}
	if reported != 2 {
		t.Errorf("the namespaced credentialNames are not both reported: %v", svc.Errors)
	}
	for _, c := range svc.Clusters {
		if strings.Contains(c.GetName(), "partner.example.com") || strings.Contains(c.GetName(), "lent.example.com") {
			t.Errorf("cluster %s built with a namespaced credentialName", c.GetName())
		}
	}
}

type authorizerFunc func(model.Identity, model.SecretRef) (bool, string)

func (f authorizerFunc) CanGetSecret(id model.Identity, ref model.SecretRef) (bool, string) {
	return f(id, ref)
}

// CanListSecrets is answered as get on every Secret of the namespace.
func (f authorizerFunc) CanListSecrets(id model.Identity, namespace string) (bool, string) {
	return f(id, model.SecretRef{Namespace: namespace})
}
