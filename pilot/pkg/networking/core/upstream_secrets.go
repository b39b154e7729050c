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
// namespace of the proxy using the cluster: the first of namespaces that
// has a usable one. A Secret missing or unusable in all of them is
// reported at the rule's field, and the clusters naming it wait for it.
func BuildUpstreamSecrets(push *model.PushContext, store model.SecretStore, namespaces ...string) ([]*tlsv3.Secret, []*config.Error) {
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
		// first tries each namespace in turn and keeps the first secret.
		first := func(load func(ref model.SecretRef) (*tlsv3.Secret, string)) {
			var problems []string
			for _, ns := range namespaces {
				sec, problem := load(model.SecretRef{Namespace: ns, Name: name})
				if problem == "" {
					out = append(out, sec)
					return
				}
				problems = append(problems, problem)
			}
			errs = append(errs, &config.Error{Source: c.rule.Source, Key: c.rule.Key(), Field: c.field,
				Message: fmt.Sprintf("for gateways in namespace %s: %s; clusters using it wait for it", strings.Join(namespaces, ", "), strings.Join(problems, "; "))})
		}
		if c.cert {
			first(func(ref model.SecretRef) (*tlsv3.Secret, string) {
				sec, problem := clientCertSecret(ref, store)
				if problem != "" {
					problem = fmt.Sprintf("Secret %s %s", ref, problem)
				}
				return sec, problem
			})
		}
		if c.ca {
			first(func(ref model.SecretRef) (*tlsv3.Secret, string) {
				return listener.CASecret(cluster.CredentialCASecretName(name), ref, store)
			})
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

// upstreamSecretsFor reads the DestinationRule credentials for the
// proxies the Gateways select. Istio reads them from the proxy's
// namespace; a gateway configuration is shared by proxies selected by the
// same Gateways, so until groups carry the proxy's namespace they are read
// from the Gateways' namespace, as their credentialNames are (the first,
// by name, that has the Secret when the Gateways span several).
func upstreamSecretsFor(push *model.PushContext, gateways []config.Config, store model.SecretStore) ([]*tlsv3.Secret, []*config.Error) {
	if len(gateways) == 0 || store == nil {
		return nil, nil
	}
	var namespaces []string
	for _, gw := range gateways {
		namespaces = append(namespaces, gw.Namespace)
	}
	slices.Sort(namespaces)
	return BuildUpstreamSecrets(push, store, slices.Compact(namespaces)...)
}
