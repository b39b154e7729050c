package listener

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// CASecret is the validation context secret name holding the CA (and CRL)
// that goes with credential ref, or why there is none Envoy can load
// (problem), or why the Secret holding it, refusedRef, is refused
// (refused, from the scope's Refusal).
func CASecret(name string, ref model.SecretRef, store model.SecretStore, refusal func(model.SecretRef) string) (sec *tlsv3.Secret, problem, refused string, refusedRef model.SecretRef) {
	if store == nil {
		if why := refusal(ref); why != "" {
			return nil, "", why, ref
		}
		return nil, fmt.Sprintf("neither Secret %s nor %s-cacert holds a CA (ca.crt or cacert)", ref, ref), "", model.SecretRef{}
	}
	ca, crl, from, why, ok := model.CAForCredential(store, ref, refusal)
	if why != "" {
		return nil, "", why, from
	}
	if !ok {
		return nil, fmt.Sprintf("neither Secret %s nor %s%s holds a CA (ca.crt or cacert)", ref, ref, model.CASuffix), "", model.SecretRef{}
	}
	if err := checkPEM(ca, "CERTIFICATE", func(der []byte) error { _, err := x509.ParseCertificate(der); return err }); err != nil {
		return nil, fmt.Sprintf("the CA in Secret %s is not usable: %v", from, err), "", model.SecretRef{}
	}
	vc := &tlsv3.CertificateValidationContext{TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: ca}}}
	if len(crl) > 0 {
		if err := checkPEM(crl, "X509 CRL", func(der []byte) error { _, err := x509.ParseRevocationList(der); return err }); err != nil {
			return nil, fmt.Sprintf("the CRL in Secret %s is not usable: %v", from, err), "", model.SecretRef{}
		}
		vc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: crl}}
	}
	sec = &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: vc}}
	if err := sec.ValidateAll(); err != nil {
		return nil, fmt.Sprintf("the CA secret %s would be rejected by Envoy: %v", sec.Name, err), "", model.SecretRef{}
	}
	return sec, "", "", model.SecretRef{}
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
	note := func(s model.GatewayServer, c model.Credential) {
		if c.IsZero() {
			return
		}
		used[c.ResourceName] = true
		if s.Mutual() {
			used[c.CAResourceName()] = true
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
