package core

import (
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/listener"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// upstreamCredential is one credentialName of a DestinationRule's tls
// settings and what the clusters using it fetch: the client certificate
// (MUTUAL) and the CA that verifies the upstream (unless
// insecureSkipVerify).
type upstreamCredential struct {
	rule        *config.Config
	field       string
	cert, ca    bool
	credentials string
}

// BuildUpstreamSecrets returns the SDS secrets the clusters of push fetch
// for DestinationRule credentialNames, named as istiod names them and as
// the clusters reference them: "kubernetes://NAME" (client certificate,
// MUTUAL) and "kubernetes://NAME-cacert" (CA and CRL; SIMPLE and MUTUAL
// unless insecureSkipVerify). As in istiod the Secret is read from the
// namespace of the proxy using the cluster, namespace; a Secret that is
// missing or unusable is reported at the rule's field, and the clusters
// naming it wait for it.
func BuildUpstreamSecrets(push *model.PushContext, store model.SecretStore, namespace string) ([]*tlsv3.Secret, []*config.Error) {
	creds := map[string]*upstreamCredential{}
	for i := range push.DestinationRules() {
		dr := &push.DestinationRules()[i]
		spec := dr.Spec.(*networking.DestinationRule)
		note := func(tp *networking.TrafficPolicy, path string) {
			visit := func(t *networking.ClientTLSSettings, f string) {
				name := t.GetCredentialName()
				mode := t.GetMode()
				if name == "" || (mode != networking.ClientTLSSettings_SIMPLE && mode != networking.ClientTLSSettings_MUTUAL) {
					return
				}
				c := creds[name]
				if c == nil {
					c = &upstreamCredential{rule: dr, field: f + ".credentialName", credentials: name}
					creds[name] = c
				}
				c.cert = c.cert || mode == networking.ClientTLSSettings_MUTUAL
				c.ca = c.ca || !t.GetInsecureSkipVerify().GetValue()
			}
			visit(tp.GetTls(), path+".tls")
			for j, pl := range tp.GetPortLevelSettings() {
				visit(pl.GetTls(), fmt.Sprintf("%s.portLevelSettings[%d].tls", path, j))
			}
		}
		note(spec.GetTrafficPolicy(), "spec.trafficPolicy")
		for j, s := range spec.GetSubsets() {
			note(s.GetTrafficPolicy(), fmt.Sprintf("spec.subsets[%d].trafficPolicy", j))
		}
	}
	var out []*tlsv3.Secret
	var errs []*config.Error
	for _, name := range slices.Sorted(maps.Keys(creds)) {
		c := creds[name]
		ref := model.SecretRef{Namespace: namespace, Name: name}
		report := func(problem string) {
			errs = append(errs, &config.Error{Source: c.rule.Source, Key: c.rule.Key(), Field: c.field,
				Message: fmt.Sprintf("for gateways in namespace %s: %s; clusters using it wait for it", namespace, problem)})
		}
		if c.cert {
			if sec, problem := clientCertSecret(ref, store); problem != "" {
				report(fmt.Sprintf("Secret %s %s", ref, problem))
			} else {
				out = append(out, sec)
			}
		}
		if c.ca {
			if sec, problem := listener.CASecret(cluster.CredentialCASecretName(name), ref, store); problem != "" {
				report(problem)
			} else {
				out = append(out, sec)
			}
		}
	}
	return out, errs
}

// clientCertSecret reads the client certificate and key of ref, named as
// the clusters reference it.
func clientCertSecret(ref model.SecretRef, store model.SecretStore) (*tlsv3.Secret, string) {
	if store == nil {
		return nil, "does not exist (or holds no tls.crt and tls.key)"
	}
	cert, key, ok := store.Secret(ref.Namespace, ref.Name)
	if !ok {
		return nil, "does not exist (or holds no tls.crt and tls.key)"
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return nil, "holds no usable certificate and key: " + strings.TrimPrefix(err.Error(), "tls: ")
	}
	sec := &tlsv3.Secret{
		Name: cluster.CredentialSecretName(ref.Name),
		Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: key}},
		}},
	}
	if err := sec.ValidateAll(); err != nil {
		return nil, "would be rejected by Envoy: " + err.Error()
	}
	return sec, ""
}
