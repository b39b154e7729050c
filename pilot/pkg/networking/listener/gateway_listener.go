package listener

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// gatewayListener is the listener of a gateway port, as every kind of port
// (HTTP, TLS, TCP) builds it: named like Istio's ("0.0.0.0_443"), bound to
// every address, with chains, and with the PROXY protocol listener filter
// first when topo asks for it (client_ip.go), and the listener access
// loggers of tel (istiod's buildListener calls setListenerAccessLog on
// every gateway listener; nil: none).
func gatewayListener(port uint32, topo model.GatewayTopology, tel *model.GatewayTelemetry, chains []*listenerv3.FilterChain) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name: model.ListenerName(port),
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       "0.0.0.0",
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		// Istio marks gateway listeners outbound: they send traffic out
		// to services, and stats and stat prefixes follow from that.
		TrafficDirection: corev3.TrafficDirection_OUTBOUND,
		FilterChains:     chains,
		AccessLog:        tel.GetListenerAccessLogs(),
	}
	if topo.ProxyProtocol {
		l.ListenerFilters = []*listenerv3.ListenerFilter{proxyProtocolFilter()}
	}
	return l
}
