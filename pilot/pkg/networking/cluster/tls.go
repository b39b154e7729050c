package cluster

import (
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// CredentialCASecretName is the SDS secret name Istio gives the CA bundle
// of a DestinationRule's credentialName: the credential's resource name
// followed by "-cacert" (model.Credential.CAResourceName).
func CredentialCASecretName(credentialName string) string {
	return CredentialSecretName(credentialName) + model.CASuffix
}

// SystemCABundle is the proxy's system root certificate bundle, which
// upstream TLS verifies against when a DestinationRule names no CA. istiod
// 1.29 sends the SDS resource "file-root:system" for that
// (cluster_tls.go constructUpstreamTLS), which its agent serves from the
// first OS bundle it finds, this path on Istio's and Envoy's Debian-based
// images (pkg/security GetOSRootFilePath). Wayfinder's gateways run without
// an agent, so Envoy is given the file directly.
const SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"

// applyTLS originates TLS for the policy's tls settings: SIMPLE, and
// MUTUAL with a client certificate (mtls.go); ISTIO_MUTUAL is reported and
// the cluster stays plaintext. Settings Envoy would reject are reported with drop set: the
// cluster must then not be built, since plaintext is not what was asked
// for. As in istiod 1.29, SIMPLE verifies the server's chain against
// caCertificates, a credentialName's CA, or else the system roots, and the
// names when subjectAltNames are given; only insecureSkipVerify turns
// verification off. TLS 1.2 to 1.3 is offered (istiod's
// defaultUpstreamCommonTLSContext; Envoy's client default stops at 1.2).
// clientCert is the backend client certificate of the proxy's Gateway
// (model.PushContext.BackendClientCertificate), presented where a
// BackendTLSPolicy set the TLS (backendClientCertificate).
func applyTLS(c *clusterv3.Cluster, h *httpOptions, pol *policy.Policy, host, clientCert string) (err *config.Error, drop bool) {
	tls := pol.TLS
	switch tls.GetMode() {
	case networking.ClientTLSSettings_DISABLE:
		return nil, false
	case networking.ClientTLSSettings_SIMPLE, networking.ClientTLSSettings_MUTUAL:
	default:
		return pol.Error(pol.TLSField+".mode", "TLS mode %s is not supported yet; requests to %s are sent without TLS", tls.GetMode(), host), false
	}
	inlineCA, e := backendTLSCA(pol, host)
	if e != nil {
		return e, true
	}
	if name := tls.GetCredentialName(); name != "" && inlineCA == "" {
		if c, err := model.ParseCredentialName(name); err == nil && c.UpstreamNamespaceError() != "" {
			// A cluster naming a Secret by a name another object may be
			// served under would present that Secret (see
			// model.Credential.UpstreamNamespaceError).
			return pol.Error(pol.TLSField+".credentialName", "%s; the clusters of %s are not built", c.UpstreamNamespaceError(), host), true
		}
	}
	common := &tlsv3.CommonTlsContext{TlsParams: &tlsv3.TlsParameters{
		TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
		TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
	}}
	verify := !tls.GetInsecureSkipVerify().GetValue()
	sans := sanMatchers(tls.GetSubjectAltNames())
	verifying := false
	switch {
	case !verify:
	case inlineCA != "":
		// A BackendTLSPolicy's CA, carried by its generated rule.
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa:                 &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: inlineCA}},
			MatchTypedSubjectAltNames: sans,
		}}
		verifying = true
	case tls.GetCredentialName() != "":
		// The CA comes from the named secret over SDS (ADS); the names to
		// check stay in the static part of the combined context.
		common.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
			CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: sans},
				ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{
					Name: CredentialCASecretName(tls.GetCredentialName()), SdsConfig: adsConfigSource()},
			}}
		verifying = true
	default:
		ca := tls.GetCaCertificates()
		if ca == "" {
			ca = SystemCABundle
		}
		vc := &tlsv3.CertificateValidationContext{
			TrustedCa:                 &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: ca}},
			MatchTypedSubjectAltNames: sans,
		}
		if crl := tls.GetCaCrl(); crl != "" {
			vc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: crl}}
		}
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
		verifying = true
	}
	if tls.GetMode() == networking.ClientTLSSettings_MUTUAL {
		if e := applyClientCertificate(common, pol, host); e != nil {
			return e, true
		}
	} else if backendClientCertificate(pol, clientCert) {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{Name: CredentialSecretName(clientCert), SdsConfig: adsConfigSource()}}
	}
	if h.h2 {
		common.AlpnProtocols = []string{"h2"}
	}
	if tls.GetSni() == "" {
		// Without an explicit SNI, Envoy sends the request's host; with
		// verification on and no names given, it also checks the
		// certificate against that host.
		h.upstream = &corev3.UpstreamHttpProtocolOptions{AutoSni: true, AutoSanValidation: verifying && len(sans) == 0}
	}
	ctx := &tlsv3.UpstreamTlsContext{CommonTlsContext: common, Sni: tls.GetSni()}
	// Cluster validation does not look inside the Any, so check here.
	if verr := ctx.ValidateAll(); verr != nil {
		return pol.Error(pol.TLSField, "upstream TLS settings for %s would be rejected by Envoy and its cluster %s is not built: %v", host, c.Name, verr), true
	}
	a, aerr := anypb.New(ctx)
	if aerr != nil {
		return pol.Error(pol.TLSField, "cannot encode upstream TLS settings for cluster %s, which is not built: %v", c.Name, aerr), true
	}
	c.TransportSocket = &corev3.TransportSocket{Name: wellknown.TransportSocketTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
	return nil, false
}

// sanMatchers matches each name exactly: as a URI SAN when it looks like
// one (spiffe://...), else as a DNS SAN.
func sanMatchers(names []string) []*tlsv3.SubjectAltNameMatcher {
	out := make([]*tlsv3.SubjectAltNameMatcher, 0, len(names))
	for _, n := range names {
		typ := tlsv3.SubjectAltNameMatcher_DNS
		if strings.Contains(n, "://") {
			typ = tlsv3.SubjectAltNameMatcher_URI
		}
		out = append(out, &tlsv3.SubjectAltNameMatcher{SanType: typ,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: n}}})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// backendTLSCA returns the CA bundle of a credentialName in a BackendTLSPolicy
// form (model.ConfigMapCredentialPrefix), which the generated rule carries
// in an annotation, or "" for any other credentialName. A rule naming
// model.InvalidCredentialName (its policy has no valid CA), or a configmap://
// name without its bundle (a rule not generated by the conversion), gets
// an error: its clusters are not built, so requests fail with a 5xx rather
// than reaching the backend unverified.
func backendTLSCA(pol *policy.Policy, host string) (string, *config.Error) {
	name := pol.TLS.GetCredentialName()
	if !model.IsBackendTLSCredential(name) {
		return "", nil
	}
	if name == model.InvalidCredentialName {
		return "", pol.Error(pol.TLSField+".credentialName", "the BackendTLSPolicy for %s has no valid CA certificate; the clusters of %s are not built", host, host)
	}
	ca := pol.Rule.Annotations[model.BackendTLSCAAnnotationPrefix+name]
	if ca == "" {
		return "", pol.Error(pol.TLSField+".credentialName", "credentialName %q names a ConfigMap, which only DestinationRules generated from a BackendTLSPolicy can; the clusters of %s are not built", name, host)
	}
	return ca, nil
}

// backendClientCertificate reports whether a Gateway's backend client
// certificate clientCert ("" for none) is presented on the cluster of
// pol: when its TLS settings are a BackendTLSPolicy's, those of the
// traffic policy or port-level settings of a rule generated from one
// (model.BackendTLSPolicyAnnotation), not a subset's, which a user's rule
// merged into it contributed. The Gateway API has no other way to
// originate TLS, and GEP-3155 presents the certificate on it.
func backendClientCertificate(pol *policy.Policy, clientCert string) bool {
	return clientCert != "" && pol.Rule != nil && pol.Rule.Annotations[model.BackendTLSPolicyAnnotation] != "" &&
		pol.TLS.GetMode() == networking.ClientTLSSettings_SIMPLE && !strings.HasPrefix(pol.TLSField, "spec.subsets")
}
