package cluster

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// CredentialSecretName is the SDS secret name Istio gives the client
// certificate of a DestinationRule's credentialName: "kubernetes://NAME".
// The Secret is looked up in the namespace of the proxy that uses the
// cluster, so the name carries no namespace.
func CredentialSecretName(credentialName string) string {
	return "kubernetes://" + credentialName
}

// applyClientCertificate adds the certificate a MUTUAL cluster presents,
// as istiod does: with credentialName, fetched over SDS as
// "kubernetes://NAME" (its CA, "NAME-cacert", is set up with the SIMPLE
// settings); otherwise read by the proxy from clientCertificate and
// privateKey. A rule with neither is reported and its cluster dropped:
// plaintext or an anonymous client is not what was asked for.
func applyClientCertificate(common *tlsv3.CommonTlsContext, pol *policy.Policy, host string) *config.Error {
	tls := pol.TLS
	switch {
	case tls.GetCredentialName() != "":
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{
			Name: CredentialSecretName(tls.GetCredentialName()), SdsConfig: adsConfigSource()}}
	case tls.GetClientCertificate() != "" && tls.GetPrivateKey() != "":
		common.TlsCertificates = []*tlsv3.TlsCertificate{{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetClientCertificate()}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetPrivateKey()}},
		}}
	default:
		return pol.Error(pol.TLSField, "MUTUAL TLS to %s needs credentialName, or clientCertificate and privateKey; its clusters are not built", host)
	}
	return nil
}
