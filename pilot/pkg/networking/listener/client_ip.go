package listener

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// How the client address and the client certificate reach the backends,
// from the proxy's gateway topology (its PROXY_CONFIG, else the mesh
// config's defaultConfig.gatewayTopology), as istiod's
// buildGatewayConnectionManager and buildGatewayListener apply it:
//
//   - numTrustedProxies is xff_num_trusted_hops (use_remote_address is
//     always on for a gateway);
//   - forwardClientCertDetails is forward_client_cert_details, SANITIZE_SET
//     when unset; with APPEND_FORWARD or SANITIZE_SET the gateway adds the
//     verified client certificate's subject, certificate, URI and DNS SANs
//     to x-forwarded-client-cert (set_current_client_cert_details). Envoy
//     only adds it on connections that presented a certificate, that is
//     on MUTUAL and OPTIONAL_MUTUAL servers; istiod sets it on every
//     gateway connection manager, and so does Wayfinder;
//   - proxyProtocol puts the PROXY protocol listener filter first on every
//     listener, HTTP, TLS and TCP alike.

// applyClientCertDetails sets how cm handles x-forwarded-client-cert.
func applyClientCertDetails(cm *hcmv3.HttpConnectionManager, topo model.GatewayTopology) {
	fcc := ForwardClientCertDetails(topo.ForwardClientCertDetails)
	cm.ForwardClientCertDetails = fcc
	// Envoy only reads set_current_client_cert_details in these two
	// modes; istiod sets it in exactly these.
	if fcc == hcmv3.HttpConnectionManager_APPEND_FORWARD || fcc == hcmv3.HttpConnectionManager_SANITIZE_SET {
		cm.SetCurrentClientCertDetails = &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{
			Subject: wrapperspb.Bool(true),
			Cert:    true,
			Dns:     true,
			Uri:     true,
		}
	}
}

// ForwardClientCertDetails maps the mesh config value to Envoy's, with
// istiod's gateway default SANITIZE_SET for UNDEFINED. The mesh enum is
// Envoy's shifted by its leading UNDEFINED (istiod's
// MeshConfigToEnvoyForwardClientCertDetails).
func ForwardClientCertDetails(v meshconfig.ForwardClientCertDetails) hcmv3.HttpConnectionManager_ForwardClientCertDetails {
	switch v {
	case meshconfig.ForwardClientCertDetails_SANITIZE:
		return hcmv3.HttpConnectionManager_SANITIZE
	case meshconfig.ForwardClientCertDetails_FORWARD_ONLY:
		return hcmv3.HttpConnectionManager_FORWARD_ONLY
	case meshconfig.ForwardClientCertDetails_APPEND_FORWARD:
		return hcmv3.HttpConnectionManager_APPEND_FORWARD
	case meshconfig.ForwardClientCertDetails_ALWAYS_FORWARD_ONLY:
		return hcmv3.HttpConnectionManager_ALWAYS_FORWARD_ONLY
	}
	return hcmv3.HttpConnectionManager_SANITIZE_SET
}

// proxyProtocolFilter reads the PROXY header (v1 or v2) the load balancer
// in front sends, so the client address is the one it names. It is
// istiod's: no options, so a connection without the header is refused.
func proxyProtocolFilter() *listenerv3.ListenerFilter {
	a, _ := anypb.New(&proxyprotocolv3.ProxyProtocol{}) // an empty well-known message always encodes
	return &listenerv3.ListenerFilter{
		Name:       wellknown.ProxyProtocol,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: a},
	}
}
