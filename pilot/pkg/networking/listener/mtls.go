package listener

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// applyClientValidation sets how a terminating server verifies client
// certificates, as istiod does:
//
//   - MUTUAL and OPTIONAL_MUTUAL with credentialName: the CA (and CRL) come
//     over SDS as the validation context "CREDENTIAL-cacert"; the names,
//     SPKI pins and hashes to check stay in the static default context the
//     SDS one is combined with.
//   - MUTUAL and OPTIONAL_MUTUAL with a CA carried inline by a Gateway
//     generated from the Gateway API (GatewayServer.ClientCA): that CA,
//     in the listener.
//   - MUTUAL and OPTIONAL_MUTUAL with files: the CA (caCertificates) and
//     CRL (caCrl) are read by the proxy from its files.
//   - SIMPLE asks for no certificate; subjectAltNames, SPKI pins and hashes
//     given anyway are passed on in a validation context, as istiod passes
//     the names, and apply to a certificate a client volunteers.
//
// OPTIONAL_MUTUAL differs from MUTUAL only in require_client_certificate:
// a certificate is asked for and checked when sent, but not required.
func applyClientValidation(common *tlsv3.CommonTlsContext, s model.GatewayServer, credential model.Credential) {
	tls := s.Server.GetTls()
	checks := &tlsv3.CertificateValidationContext{
		MatchSubjectAltNames:  exactMatchers(tls.GetSubjectAltNames()),
		VerifyCertificateSpki: tls.GetVerifyCertificateSpki(),
		VerifyCertificateHash: tls.GetVerifyCertificateHash(),
	}
	if tls.GetInsecureSkipVerify().GetValue() {
		checks.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
	}
	switch {
	case s.Mutual() && s.ClientCA != "":
		// The Gateway API's client certificate validation: the CA
		// bundle carried by the generated Gateway, inline.
		checks.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: s.ClientCA}}
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: checks}
	case s.Mutual() && !credential.IsZero():
		common.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
			CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:         checks,
				ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: credential.CAResourceName(), SdsConfig: adsConfigSource()},
			},
		}
	case s.Mutual():
		checks.TrustedCa = fileSource(tls.GetCaCertificates())
		if crl := tls.GetCaCrl(); crl != "" {
			checks.Crl = fileSource(crl)
		}
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: checks}
	case len(checks.MatchSubjectAltNames) > 0 || len(checks.VerifyCertificateSpki) > 0 || len(checks.VerifyCertificateHash) > 0:
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: checks}
	}
}

// exactMatchers matches each name exactly against any SAN type, as
// istiod's server-side subjectAltNames do.
func exactMatchers(names []string) []*matcherv3.StringMatcher {
	if len(names) == 0 {
		return nil
	}
	out := make([]*matcherv3.StringMatcher, 0, len(names))
	for _, n := range names {
		out = append(out, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: n}})
	}
	return out
}

func fileSource(path string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
}
