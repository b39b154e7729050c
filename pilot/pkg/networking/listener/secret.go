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

// BuildSecrets returns the SDS secrets the terminating servers of mg
// reference (HTTPS, and TLS with TCP inside) for the proxies of scope,
// sorted by name, and the merged gateway the listeners and routes must be
// built from: mg without the servers whose secrets those proxies may not
// have, or which are missing or unusable. A server with a credentialName
// needs its certificate ("kubernetes://NAME" or "kubernetes://NS/NAME")
// and, when it verifies clients (MUTUAL, OPTIONAL_MUTUAL), the CA that
// goes with it ("...-cacert": ca.crt of the same Secret, else of Secret
// NAME-cacert in the same namespace, as istiod reads it). Every one is
// resolved in the scope's namespace unless the credentialName names one,
// and every Secret is checked with scope.Refusal, for the Gateway naming
// it, before it is read: one rule for every kind of secret. A listener referencing a secret Envoy never receives
// stays warming, and one Envoy cannot load gets the whole listener
// rejected, so those servers are left out (chain and routes) and
// reported; refusals are also returned for the debug pages. A nil store
// has no Secrets. mg itself is not modified.
func BuildSecrets(mg *model.MergedGateway, store model.SecretStore, scope model.SecretScope) ([]*tlsv3.Secret, *model.MergedGateway, []model.SecretRefusal, []*config.Error) {
	out := *mg
	out.HTTPSServers = make(map[uint32][]model.HTTPSServer, len(mg.HTTPSServers))
	out.HTTPSPorts = nil
	out.TLSServers = make(map[uint32][]model.TLSServer, len(mg.TLSServers))
	out.TLSPorts = nil
	b := secretBuilder{store: store, scope: scope, secrets: map[string]*tlsv3.Secret{}, verdicts: map[verdictKey]verdict{}}
	for _, port := range mg.HTTPSPorts {
		for _, s := range mg.HTTPSServers[port] {
			if b.usable(s.GatewayServer, s.Credential) {
				if _, ok := out.HTTPSServers[port]; !ok {
					out.HTTPSPorts = append(out.HTTPSPorts, port)
				}
				out.HTTPSServers[port] = append(out.HTTPSServers[port], s)
			}
		}
	}
	for _, port := range mg.TLSPorts {
		for _, s := range mg.TLSServers[port] {
			if b.usable(s.GatewayServer, s.Credential) {
				if _, ok := out.TLSServers[port]; !ok {
					out.TLSPorts = append(out.TLSPorts, port)
				}
				out.TLSServers[port] = append(out.TLSServers[port], s)
			}
		}
	}
	list := make([]*tlsv3.Secret, 0, len(b.secrets))
	for _, name := range slices.Sorted(maps.Keys(b.secrets)) {
		list = append(list, b.secrets[name])
	}
	return ReferencedSecrets(&out, list), &out, b.refused, b.errs
}

// verdict is what became of one SDS resource for the scope and the
// Gateway naming it: the Secret it resolved to, and why it is refused or
// unusable ("" when neither).
type verdict struct {
	ref              model.SecretRef
	problem, refusal string
}

// secretBuilder resolves, authorizes and checks each SDS resource once per
// Gateway naming it, however many of its servers use it.
type secretBuilder struct {
	store    model.SecretStore
	scope    model.SecretScope
	secrets  map[string]*tlsv3.Secret
	verdicts map[verdictKey]verdict
	refused  []model.SecretRefusal
	errs     []*config.Error
}

// verdictKey is one SDS resource as one Gateway names it: whether a
// Gateway may have a Secret depends on the Gateway too (SecretScope.For),
// so a resource one Gateway may use is not thereby usable by a server of
// another, though both fetch it by the same name.
type verdictKey struct {
	resource string
	gateway  config.Key
}

// usable loads what server s needs from its credential (the certificate,
// and the CA when it verifies clients) and reports whether all of it may
// be sent and is usable.
func (b *secretBuilder) usable(s model.GatewayServer, c model.Credential) bool {
	if c.IsZero() {
		return true
	}
	if !b.check(s, c.ResourceName, b.verdict(s, c.ResourceName, c, b.loadCert), false) {
		return false
	}
	if !s.Mutual() || s.ClientCA != "" {
		// A CA carried inline (model.GatewayClientCAAnnotationPrefix)
		// is in the listener itself: no SDS resource.
		return true
	}
	return b.check(s, c.CAResourceName(), b.verdict(s, c.CAResourceName(), c, b.loadCA), true)
}

// verdict returns resource's verdict for server s's Gateway, computing it
// with load the first time. Nothing is read for an unauthenticated scope,
// nor for a Secret the scope's proxies or the Gateway are not entitled
// to: the refusal is decided first, so it reads the same whether the
// Secret exists or not.
func (b *secretBuilder) verdict(s model.GatewayServer, resource string, c model.Credential, load func(string, model.SecretRef, func(model.SecretRef) string) (*tlsv3.Secret, string, string, model.SecretRef)) verdict {
	vk := verdictKey{resource: resource, gateway: s.Gateway}
	if v, ok := b.verdicts[vk]; ok {
		return v
	}
	scope := b.scope.For(model.SecretOwner{Key: s.Gateway, Source: s.Source})
	v := verdict{ref: c.Resolve(scope.Namespace())}
	if scope.Identity == nil {
		v.refusal = scope.Refusal(v.ref)
	} else {
		var sec *tlsv3.Secret
		var refused model.SecretRef
		sec, v.problem, v.refusal, refused = load(resource, v.ref, scope.Refusal)
		if v.refusal != "" && refused != (model.SecretRef{}) {
			// The Secret refused is the one the resource was to be read
			// from (a CA's may be NAME-cacert).
			v.ref = refused
		}
		if sec != nil && v.problem == "" && v.refusal == "" {
			b.secrets[sec.Name] = sec
		}
	}
	b.verdicts[vk] = v
	return v
}

// loadCert checks that the scope may have the certificate and key, then
// reads them.
func (b *secretBuilder) loadCert(resource string, ref model.SecretRef, refusal func(model.SecretRef) string) (*tlsv3.Secret, string, string, model.SecretRef) {
	if why := refusal(ref); why != "" {
		return nil, "", why, ref
	}
	sec, problem := LoadKeyPair(resource, ref, b.store)
	if problem != "" {
		return nil, problem, "", model.SecretRef{}
	}
	return sec, "", "", model.SecretRef{}
}

// loadCA reads the CA bundle (and CRL) that goes with credential ref; the
// Secret it is read from is checked with refusal.
func (b *secretBuilder) loadCA(resource string, ref model.SecretRef, refusal func(model.SecretRef) string) (*tlsv3.Secret, string, string, model.SecretRef) {
	return CASecret(resource, ref, b.store, refusal)
}

// check reports a refused or unusable verdict for server s (of its CA
// when ca) and whether the server can be built.
func (b *secretBuilder) check(s model.GatewayServer, resource string, v verdict, ca bool) bool {
	port := s.Server.GetPort().GetNumber()
	server := s.Server.GetPort().GetName()
	what := ""
	if ca {
		what = fmt.Sprintf(" (%s, the CA verifying client certificates)", s.Server.GetTls().GetMode())
	}
	switch {
	case v.refusal != "":
		secret := v.ref.String()
		if v.ref.Namespace == "" {
			secret = v.ref.Name + " of the proxy's namespace"
		}
		b.refused = append(b.refused, model.SecretRefusal{Resource: resource, Secret: secret,
			Gateway: s.Gateway.Namespace + "/" + s.Gateway.Name, Server: s.Field(""), Reason: v.refusal})
		b.errs = append(b.errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
			Message: fmt.Sprintf("server %s on port %d%s: Secret %s (%s) is not sent to %s: %s; their filter chain for it is left out", server, port, what, secret, resource, b.scope, v.refusal)})
		return false
	case v.problem != "" && ca:
		b.errs = append(b.errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
			Message: fmt.Sprintf("server %s on port %d (%s) verifies client certificates, but %s; its filter chain is not built",
				server, port, s.Server.GetTls().GetMode(), v.problem)})
		return false
	case v.problem != "":
		b.errs = append(b.errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
			Message: fmt.Sprintf("server %s on port %d: Secret %s %s; its filter chain is not built", server, port, v.ref, v.problem)})
		return false
	}
	return true
}

// LoadKeyPair reads ref and checks that Envoy can use it: a PEM certificate
// chain with its matching private key. It returns the secret, named
// resource, or why not. The reason never quotes the Secret's data. Server
// certificates and upstream client certificates are both read with it.
func LoadKeyPair(resource string, ref model.SecretRef, store model.SecretStore) (*tlsv3.Secret, string) {
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
