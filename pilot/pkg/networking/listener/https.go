package listener

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// ALPNProtocols are offered by every HTTPS chain: HTTP/2 first, then
// HTTP/1.1, as Istio offers them on gateway HTTPS servers.
var ALPNProtocols = []string{"h2", "http/1.1"}

// httpsFilterChain is one server's chain: match its SNI names, terminate
// TLS with its certificate, and route with its own route configuration.
func httpsFilterChain(port uint32, s model.HTTPSServer, topo model.GatewayTopology, tel *model.GatewayTelemetry, sec *model.GatewaySecurity, sessions bool) (*listenerv3.FilterChain, error) {
	tlsCtx, err := downstreamTLS(s.GatewayServer, s.Credential)
	if err != nil {
		return nil, err
	}
	if err := tlsCtx.ValidateAll(); err != nil {
		return nil, err
	}
	cm := connectionManager(port, s.RouteName, topo, tel, sec, sessions)
	if err := cm.ValidateAll(); err != nil {
		return nil, err
	}
	tlsAny, err := anypb.New(tlsCtx)
	if err != nil {
		return nil, err
	}
	hcm, err := anypb.New(cm)
	if err != nil {
		return nil, err
	}
	fc := &listenerv3.FilterChain{
		TransportSocket: &corev3.TransportSocket{
			Name:       wellknown.TransportSocketTLS,
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tlsAny},
		},
		Filters: []*listenerv3.Filter{{
			Name:       wellknown.HTTPConnectionManager,
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}},
	}
	if len(s.ServerNames) > 0 {
		fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: s.ServerNames}
	}
	return fc, nil
}

// downstreamTLS is the server's TLS termination: its certificate over SDS
// (credentialName) or from files on the proxy, its protocol versions and
// cipher suites, and how client certificates are verified (mtls.go).
func downstreamTLS(s model.GatewayServer, credential model.Credential) (*tlsv3.DownstreamTlsContext, error) {
	tls := s.Server.GetTls()
	params, err := tlsParams(tls)
	if err != nil {
		return nil, err
	}
	common := &tlsv3.CommonTlsContext{TlsParams: params, AlpnProtocols: ALPNProtocols}
	if !credential.IsZero() {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{
			Name:      credential.ResourceName,
			SdsConfig: adsConfigSource(),
		}}
	} else {
		// Envoy reads the files itself; they must exist in the proxy.
		common.TlsCertificates = []*tlsv3.TlsCertificate{{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetServerCertificate()}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetPrivateKey()}},
		}}
	}
	applyClientValidation(common, s, credential)
	return &tlsv3.DownstreamTlsContext{
		CommonTlsContext:         common,
		RequireClientCertificate: wrapperspb.Bool(tls.GetMode() == networking.ServerTLSSettings_MUTUAL),
	}, nil
}

// tlsParams maps the server's protocol versions and cipher suites. Like
// Istio, gateways accept TLS 1.2 and 1.3 unless told otherwise.
func tlsParams(tls *networking.ServerTLSSettings) (*tlsv3.TlsParameters, error) {
	p := &tlsv3.TlsParameters{
		TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
		TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
		CipherSuites:              tls.GetCipherSuites(),
	}
	if v := tls.GetMinProtocolVersion(); v != networking.ServerTLSSettings_TLS_AUTO {
		p.TlsMinimumProtocolVersion = tlsVersion(v)
	}
	if v := tls.GetMaxProtocolVersion(); v != networking.ServerTLSSettings_TLS_AUTO {
		p.TlsMaximumProtocolVersion = tlsVersion(v)
	}
	if p.TlsMinimumProtocolVersion > p.TlsMaximumProtocolVersion {
		return nil, fmt.Errorf("minimum TLS version %s is above maximum %s (tls.minProtocolVersion, tls.maxProtocolVersion; unset means 1.2 and 1.3)",
			p.TlsMinimumProtocolVersion, p.TlsMaximumProtocolVersion)
	}
	return p, nil
}

func tlsVersion(v networking.ServerTLSSettings_TLSProtocol) tlsv3.TlsParameters_TlsProtocol {
	switch v {
	case networking.ServerTLSSettings_TLSV1_0:
		return tlsv3.TlsParameters_TLSv1_0
	case networking.ServerTLSSettings_TLSV1_1:
		return tlsv3.TlsParameters_TLSv1_1
	case networking.ServerTLSSettings_TLSV1_2:
		return tlsv3.TlsParameters_TLSv1_2
	case networking.ServerTLSSettings_TLSV1_3:
		return tlsv3.TlsParameters_TLSv1_3
	}
	return tlsv3.TlsParameters_TLS_AUTO
}
