package listener

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// BuildTLSSecrets complements BuildSecrets: it returns the SDS secrets of
// the certificates of terminating TLS servers (TCP inside), and of the CA
// bundles that MUTUAL and OPTIONAL_MUTUAL servers with a credentialName
// verify clients with, sorted by name, and mg without the servers whose
// Secret is missing or unusable (reported). A CA secret is a validation
// context named "kubernetes://NAMESPACE/NAME-cacert": the ca.crt (or
// cacert) of the credential's Secret, else of Secret NAME-cacert, with
// its ca.crl (or crl) when there is one, as istiod reads them. mg itself
// is not modified.
func BuildTLSSecrets(mg *model.MergedGateway, store model.SecretStore) ([]*tlsv3.Secret, *model.MergedGateway, []*config.Error) {
	out := *mg
	out.HTTPSServers = make(map[uint32][]model.HTTPSServer, len(mg.HTTPSServers))
	out.HTTPSPorts = nil
	out.TLSServers = make(map[uint32][]model.TLSServer, len(mg.TLSServers))
	out.TLSPorts = nil
	b := secretBuilder{store: store, secrets: map[string]*tlsv3.Secret{}, certs: map[model.SecretRef]string{}, cas: map[model.SecretRef]string{}}
	for _, port := range mg.HTTPSPorts {
		for _, s := range mg.HTTPSServers[port] {
			if b.usable(s.GatewayServer, s.Credential, false, &b.errs) {
				if _, ok := out.HTTPSServers[port]; !ok {
					out.HTTPSPorts = append(out.HTTPSPorts, port)
				}
				out.HTTPSServers[port] = append(out.HTTPSServers[port], s)
			}
		}
	}
	for _, port := range mg.TLSPorts {
		for _, s := range mg.TLSServers[port] {
			if b.usable(s.GatewayServer, s.Credential, true, &b.errs) {
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
	return list, &out, b.errs
}

// secretBuilder looks each Secret up once, however many servers use it.
type secretBuilder struct {
	store   model.SecretStore
	secrets map[string]*tlsv3.Secret
	// certs and cas hold why a credential's certificate or CA cannot be
	// used ("" when it can), once looked up.
	certs, cas map[model.SecretRef]string
	errs       []*config.Error
}

// usable loads what server s needs from its credential (the certificate
// when withCert, the CA when it verifies clients) and reports whether all
// of it is there.
func (b *secretBuilder) usable(s model.GatewayServer, ref model.SecretRef, withCert bool, errs *[]*config.Error) bool {
	if ref == (model.SecretRef{}) {
		return true
	}
	port := s.Server.GetPort().GetNumber()
	if withCert {
		problem, seen := b.certs[ref]
		if !seen {
			var sec *tlsv3.Secret
			sec, problem = loadSecret(ref, b.store)
			b.certs[ref] = problem
			if sec != nil {
				b.secrets[sec.Name] = sec
			}
		}
		if problem != "" {
			*errs = append(*errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
				Message: fmt.Sprintf("server %s on port %d: Secret %s %s; its filter chain is not built", s.Server.GetPort().GetName(), port, ref, problem)})
			return false
		}
	}
	if !s.Mutual() {
		return true
	}
	problem, seen := b.cas[ref]
	if !seen {
		var sec *tlsv3.Secret
		sec, problem = loadCA(ref, b.store)
		b.cas[ref] = problem
		if sec != nil {
			b.secrets[sec.Name] = sec
		}
	}
	if problem != "" {
		*errs = append(*errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls.credentialName"),
			Message: fmt.Sprintf("server %s on port %d (%s) verifies client certificates, but %s; its filter chain is not built",
				s.Server.GetPort().GetName(), port, s.Server.GetTls().GetMode(), problem)})
		return false
	}
	return true
}

// loadCA reads the CA bundle (and CRL) that goes with credential ref and
// checks that Envoy can load it. It returns the secret or why not.
func loadCA(ref model.SecretRef, store model.SecretStore) (*tlsv3.Secret, string) {
	return CASecret(ref.CASDSName(), ref, store)
}

// CASecret is the validation context secret name holding the CA (and CRL)
// that goes with credential ref, or why there is none Envoy can load.
func CASecret(name string, ref model.SecretRef, store model.SecretStore) (*tlsv3.Secret, string) {
	if store == nil {
		return nil, fmt.Sprintf("neither Secret %s nor %s-cacert holds a CA (ca.crt or cacert)", ref, ref)
	}
	ca, crl, from, ok := model.CAForCredential(store, ref)
	if !ok {
		return nil, fmt.Sprintf("neither Secret %s nor %s%s holds a CA (ca.crt or cacert)", ref, ref, model.CASuffix)
	}
	if err := checkPEM(ca, "CERTIFICATE", func(der []byte) error { _, err := x509.ParseCertificate(der); return err }); err != nil {
		return nil, fmt.Sprintf("the CA in Secret %s is not usable: %v", from, err)
	}
	vc := &tlsv3.CertificateValidationContext{TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: ca}}}
	if len(crl) > 0 {
		if err := checkPEM(crl, "X509 CRL", func(der []byte) error { _, err := x509.ParseRevocationList(der); return err }); err != nil {
			return nil, fmt.Sprintf("the CRL in Secret %s is not usable: %v", from, err)
		}
		vc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: crl}}
	}
	sec := &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: vc}}
	if err := sec.ValidateAll(); err != nil {
		return nil, fmt.Sprintf("the CA secret %s would be rejected by Envoy: %v", sec.Name, err)
	}
	return sec, ""
}

// checkPEM checks that data is PEM holding at least one block of typ and
// that every such block parses: Envoy rejects a bundle it cannot read,
// and with it the listener.
func checkPEM(data []byte, typ string, parse func([]byte) error) error {
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != typ {
			continue
		}
		if err := parse(block.Bytes); err != nil {
			return fmt.Errorf("PEM block %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM " + typ + " block")
	}
	return nil
}

// ReferencedSecrets keeps of secrets those a server of mg still names: a
// server dropped after its certificate was loaded (its CA is missing, say)
// must not leave the certificate behind, unreferenced.
func ReferencedSecrets(mg *model.MergedGateway, secrets []*tlsv3.Secret) []*tlsv3.Secret {
	used := map[string]bool{}
	note := func(s model.GatewayServer, ref model.SecretRef) {
		if ref == (model.SecretRef{}) {
			return
		}
		used[ref.SDSName()] = true
		if s.Mutual() {
			used[ref.CASDSName()] = true
		}
	}
	for _, port := range mg.HTTPSPorts {
		for _, s := range mg.HTTPSServers[port] {
			note(s.GatewayServer, s.Credential)
		}
	}
	for _, port := range mg.TLSPorts {
		for _, s := range mg.TLSServers[port] {
			note(s.GatewayServer, s.Credential)
		}
	}
	return slices.DeleteFunc(slices.Clone(secrets), func(s *tlsv3.Secret) bool { return !used[s.GetName()] })
}
