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
// (credentialName), sorted by name, and the merged gateway the listeners
// and routes must be built from: mg without the servers whose Secret is
// missing or unusable. Those servers are reported and dropped, since a
// listener referencing a secret Envoy never receives stays warming, and a
// certificate Envoy cannot load gets the whole listener rejected. A nil
// store has no Secrets. mg itself is not modified.
func BuildSecrets(mg *model.MergedGateway, store model.SecretStore) ([]*tlsv3.Secret, *model.MergedGateway, []*config.Error) {
	out := *mg
	out.HTTPSServers = make(map[uint32][]model.HTTPSServer, len(mg.HTTPSServers))
	out.HTTPSPorts = nil
	var errs []*config.Error
	secrets := map[string]*tlsv3.Secret{}
	// Each Secret is looked up and checked once, however many servers use it.
	problems := map[model.SecretRef]string{}
	for _, port := range mg.HTTPSPorts {
		for _, s := range mg.HTTPSServers[port] {
			if ref := s.Credential; ref != (model.SecretRef{}) {
				problem, seen := problems[ref]
				if !seen {
					var sec *tlsv3.Secret
					sec, problem = loadSecret(ref, store)
					problems[ref] = problem
					if sec != nil {
						secrets[sec.Name] = sec
					}
				}
				if problem != "" {
					errs = append(errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
						Message: fmt.Sprintf("server %s on port %d: Secret %s %s; its filter chain is not built", s.Server.GetPort().GetName(), port, ref, problem)})
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
	return list, &out, errs
}

// loadSecret reads ref and checks that Envoy can use it: a PEM certificate
// chain with its matching private key. It returns the secret or why not.
func loadSecret(ref model.SecretRef, store model.SecretStore) (*tlsv3.Secret, string) {
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
		Name: ref.SDSName(),
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
