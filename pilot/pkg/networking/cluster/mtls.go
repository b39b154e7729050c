package cluster

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// CredentialSecretName is the SDS secret name Istio gives the client
// certificate of a DestinationRule's credentialName, named as a Gateway's
// (model.ParseCredentialName): "kubernetes://NAME", resolved in the
// namespace of the proxy that uses the cluster, or
// "kubernetes://NAMESPACE/NAME". A name that does not parse keeps the
// plain prefixed form; the secret builder reports it.
func CredentialSecretName(credentialName string) string {
	if c, err := model.ParseCredentialName(credentialName); err == nil {
		return c.ResourceName
	}
	return model.KubernetesSecretPrefix + credentialName
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
