package listener

import (
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// BuildSecrets returns the SDS secrets the HTTPS servers of mg reference
// (credentialName) for the proxies of scope, sorted by name, and the
// merged gateway the listeners and routes must be built from: mg without
// the servers whose Secret they may not have, or which is missing or
// unusable. A listener referencing a secret Envoy never receives stays
// warming, and a certificate Envoy cannot load gets the whole listener
// rejected, so those servers are left out (chain and routes) and reported;
// refusals (scope.Refusal) are also returned for the debug pages. Each
// credentialName is resolved in the scope's namespace unless it names
// one. A nil store has no Secrets. mg itself is not modified.
func BuildSecrets(mg *model.MergedGateway, store model.SecretStore, scope model.SecretScope) ([]*tlsv3.Secret, *model.MergedGateway, []model.SecretRefusal, []*config.Error) {
	out := *mg
	out.HTTPSServers = make(map[uint32][]model.HTTPSServer, len(mg.HTTPSServers))
	out.HTTPSPorts = nil
	var errs []*config.Error
	var refused []model.SecretRefusal
	secrets := map[string]*tlsv3.Secret{}
	// Each resource is resolved, authorized and checked once, however many
	// servers use it: one SubjectAccessReview at most per Secret.
	type verdict struct {
		ref              model.SecretRef
		problem, refusal string
	}
	verdicts := map[string]verdict{}
	for _, port := range mg.HTTPSPorts {
		for _, s := range mg.HTTPSServers[port] {
			if c := s.Credential; !c.IsZero() {
				v, seen := verdicts[c.ResourceName]
				if !seen {
					v = verdict{ref: c.Resolve(scope.Namespace())}
					if scope.Identity == nil {
						// Not even looked up: nothing of it is for this proxy.
						v.refusal = scope.Refusal(v.ref)
					} else {
						// A missing Secret needs no SubjectAccessReview.
						var sec *tlsv3.Secret
						sec, v.problem = loadSecret(c.ResourceName, v.ref, store)
						if v.problem == "" {
							v.refusal = scope.Refusal(v.ref)
						}
						if sec != nil && v.refusal == "" {
							secrets[sec.Name] = sec
						}
					}
					verdicts[c.ResourceName] = v
				}
				server := s.Server.GetPort().GetName()
				switch {
				case v.refusal != "":
					secret := v.ref.String()
					if v.ref.Namespace == "" {
						secret = v.ref.Name + " of the proxy's namespace"
					}
					refused = append(refused, model.SecretRefusal{Resource: c.ResourceName, Secret: secret,
						Gateway: s.Gateway.Namespace + "/" + s.Gateway.Name, Server: s.Field(""), Reason: v.refusal})
					errs = append(errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
						Message: fmt.Sprintf("server %s on port %d: Secret %s (%s) is not sent to %s: %s; their filter chain for it is left out", server, port, secret, c.ResourceName, scope, v.refusal)})
					continue
				case v.problem != "":
					errs = append(errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
						Message: fmt.Sprintf("server %s on port %d: Secret %s %s; its filter chain is not built", server, port, v.ref, v.problem)})
					continue
				}
			}
			if _, ok := out.HTTPSServers[port]; !ok {
				out.HTTPSPorts = append(out.HTTPSPorts, port)
			}
			out.HTTPSServers[port] = append(out.HTTPSServers[port], s)
		}
	}
	list := make([]*tlsv3.Secret, 0, len(secrets))
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		list = append(list, secrets[name])
	}
	return list, &out, refused, errs
}

// loadSecret reads ref and checks that Envoy can use it: a PEM certificate
// chain with its matching private key. It returns the secret, named
// resource, or why not. The reason never quotes the Secret's data.
func loadSecret(resource string, ref model.SecretRef, store model.SecretStore) (*tlsv3.Secret, string) {
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
		Name: resource,
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
