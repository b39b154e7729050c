package listener

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// ALPNProtocols are offered by every HTTPS chain: HTTP/2 first, then
// HTTP/1.1, as Istio offers them on gateway HTTPS servers.
var ALPNProtocols = []string{"h2", "http/1.1"}

// buildHTTPSListener builds the listener of one HTTPS port: a TLS
// inspector reads the client's SNI, and each server has its own filter
// chain matching its hosts. A chain Envoy would reject is reported and
// left out; without any chain there is no listener.
func buildHTTPSListener(port uint32, servers []model.HTTPSServer) (*listenerv3.Listener, []*config.Error) {
	var errs []*config.Error
	var chains []*listenerv3.FilterChain
	for _, s := range servers {
		fc, err := httpsFilterChain(port, s)
		if err != nil {
			errs = append(errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
				Message: fmt.Sprintf("filter chain for server %s on listener %s would be rejected by Envoy and is not built: %v", s.Server.GetPort().GetName(), model.ListenerName(port), err)})
			continue
		}
		chains = append(chains, fc)
	}
	if len(chains) == 0 {
		return nil, errs
	}
	inspector, err := anypb.New(&tlsinspectorv3.TlsInspector{})
	if err != nil {
		return nil, append(errs, &config.Error{Message: "tls inspector: " + err.Error()})
	}
	l := &listenerv3.Listener{
		Name: model.ListenerName(port),
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       "0.0.0.0",
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		// SNI is only known once the TLS inspector has read the
		// ClientHello; without it no server_names match would apply.
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       wellknown.TlsInspector,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: inspector},
		}},
		FilterChains: chains,
	}
	if err := l.ValidateAll(); err != nil {
		for _, s := range servers {
			errs = append(errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
				Message: fmt.Sprintf("listener %s would be rejected by Envoy and is not built: %v", model.ListenerName(port), err)})
		}
		return nil, errs
	}
	return l, errs
}

// httpsFilterChain is one server's chain: match its SNI names, terminate
// TLS with its certificate, and route with its own route configuration.
func httpsFilterChain(port uint32, s model.HTTPSServer) (*listenerv3.FilterChain, error) {
	tlsCtx, err := downstreamTLS(s)
	if err != nil {
		return nil, err
	}
	if err := tlsCtx.ValidateAll(); err != nil {
		return nil, err
	}
	cm := connectionManager(port, s.RouteName)
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
// cipher suites. Client certificates are not asked for (SIMPLE mode).
func downstreamTLS(s model.HTTPSServer) (*tlsv3.DownstreamTlsContext, error) {
	tls := s.Server.GetTls()
	params, err := tlsParams(tls)
	if err != nil {
		return nil, err
	}
	common := &tlsv3.CommonTlsContext{TlsParams: params, AlpnProtocols: ALPNProtocols}
	if !s.Credential.IsZero() {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{
			Name:      s.Credential.ResourceName,
			SdsConfig: adsConfigSource(),
		}}
	} else {
		// Envoy reads the files itself; they must exist in the proxy.
		common.TlsCertificates = []*tlsv3.TlsCertificate{{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetServerCertificate()}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetPrivateKey()}},
		}}
	}
	return &tlsv3.DownstreamTlsContext{
		CommonTlsContext:         common,
		RequireClientCertificate: wrapperspb.Bool(false),
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
