// Package listener translates a merged gateway configuration into Envoy
// listeners, named like Istio's ("0.0.0.0_80"): one per HTTP port, an HTTP
// connection manager that fetches its routes ("http.80") over RDS; and one
// per HTTPS port, with a TLS-terminating filter chain per server, chosen by
// SNI, whose certificate comes over SDS and whose routes are the server's
// own ("https.443.NAME.GATEWAY.NAMESPACE"). TLS servers share such a
// port: PASSTHROUGH ones with a chain per tls route match forwarding by
// SNI, terminating ones with their tcp route (tlsport.go, passthrough.go,
// tcp.go); plain TCP ports get a TCP proxy. It also builds the SDS secrets
// those chains reference: certificates (secret.go) and the CAs that
// verify client certificates (tls_secrets.go, mtls.go). The proxy's
// gateway topology (model.GatewayTopology, carried by the push context)
// sets how the client address and certificate reach backends: trusted
// X-Forwarded-For hops, x-forwarded-client-cert, the PROXY protocol
// (client_ip.go). Its telemetry (model.GatewayTelemetry, also carried by
// the push context) puts the access loggers on every connection manager,
// tcp_proxy and listener, and the tracing and request ID extension on
// every connection manager, where istiod puts them.
package listener

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/telemetry"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// HTTPFilterNames are the HTTP filters of every gateway listener, in order.
// Routes configure fault injection and CORS per route through
// typed_per_filter_config under the first two names; the router comes last.
// Where a Gateway API route has sessionPersistence, the stateful session
// filter goes before the router (sessions.go).
var HTTPFilterNames = []string{wellknown.Fault, wellknown.CORS, wellknown.Router}

// BuildGatewayListeners returns one listener per port of mg, sorted by
// name: HTTP ports, TLS ports (HTTPS and TLS servers by SNI; tlsport.go)
// and TCP ports, whose tcp and tls routes are read from push. A listener
// (or filter chain) Envoy would reject is reported against the gateway
// servers it came from and left out.
func BuildGatewayListeners(push *model.PushContext, mg *model.MergedGateway) ([]*listenerv3.Listener, []*config.Error) {
	var out []*listenerv3.Listener
	var errs []*config.Error
	if push != nil && push.GatewayTelemetry() == nil {
		// The server sets each group's telemetry (it keys groups by it);
		// a caller that did not gets the mesh-wide one.
		push = push.WithGatewayTelemetry(telemetry.ForProxy(push, nil).Gateway())
	}
	topo, tel := push.GatewayTopology(), push.GatewayTelemetry()
	// What the telemetry, authentication and authorization translators
	// left out, against the object (or mesh config) field responsible.
	errs = append(errs, tel.GetProblems()...)
	errs = append(errs, push.GatewaySecurity().GetProblems()...)
	for _, port := range mg.HTTPPorts {
		l, err := buildListener(port, topo, tel, push.GatewaySecurity(), usesSessions(push, mg.HTTPServers[port]))
		if err == nil {
			err = l.ValidateAll()
		}
		if err != nil {
			for _, s := range mg.HTTPServers[port] {
				errs = append(errs, &config.Error{Source: s.Source, Key: s.Gateway, Field: fmt.Sprintf("spec.servers[%d]", s.Index),
					Message: fmt.Sprintf("listener %s would be rejected by Envoy and is not built: %v", model.ListenerName(port), err)})
			}
			continue
		}
		out = append(out, l)
	}
	l4 := &errorSet{}
	tlsPorts := slices.Concat(mg.HTTPSPorts, mg.TLSPorts)
	slices.Sort(tlsPorts)
	for _, port := range slices.Compact(tlsPorts) {
		if l := buildTLSPortListener(push, port, mg.HTTPSServers[port], mg.TLSServers[port], l4); l != nil {
			out = append(out, l)
		}
	}
	for _, port := range mg.TCPPorts {
		if l := buildTCPListener(push, port, mg.TCPServers[port], l4); l != nil {
			out = append(out, l)
		}
	}
	errs = append(errs, l4.list...)
	slices.SortFunc(out, func(a, b *listenerv3.Listener) int { return strings.Compare(a.Name, b.Name) })
	return out, errs
}

func buildListener(port uint32, topo model.GatewayTopology, tel *model.GatewayTelemetry, sec *model.GatewaySecurity, sessions bool) (*listenerv3.Listener, error) {
	// Validation of the listener does not look inside Any fields, so the
	// connection manager is checked on its own.
	cm := connectionManager(port, model.RouteName(port), topo, tel, sec, sessions)
	if err := cm.ValidateAll(); err != nil {
		return nil, err
	}
	hcm, err := anypb.New(cm)
	if err != nil {
		return nil, err
	}
	return gatewayListener(port, topo, tel, []*listenerv3.FilterChain{{
		Filters: []*listenerv3.Filter{{
			Name:       wellknown.HTTPConnectionManager,
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}},
	}}), nil
}

// ConnectionManager is the HTTP connection manager of the gateway listener
// on port, with the defaults Istio gives gateways and the client address
// and certificate handling of topo and the access logging and tracing of
// tel (nil: none), without authentication or authorization filters.
func ConnectionManager(port uint32, topo model.GatewayTopology, tel *model.GatewayTelemetry) *hcmv3.HttpConnectionManager {
	return connectionManager(port, model.RouteName(port), topo, tel, nil, false)
}

// connectionManager is the gateway connection manager on port fetching
// route configuration routeName, for proxies of topology topo and
// telemetry tel; with the stateful session filter when its routes have
// sessions.
func connectionManager(port uint32, routeName string, topo model.GatewayTopology, tel *model.GatewayTelemetry, sec *model.GatewaySecurity, sessions bool) *hcmv3.HttpConnectionManager {
	// istiod's buildHTTPConnectionManager: the CUSTOM authorization, JWT
	// authentication and RBAC filters come first, then fault, CORS and
	// the router.
	filters := append(make([]*hcmv3.HttpFilter, 0, len(HTTPFilterNames)+4), sec.HTTPFilters()...)
	for _, f := range []struct {
		name string
		cfg  proto.Message
	}{{wellknown.Fault, &faultv3.HTTPFault{}}, {wellknown.CORS, &corsv3.Cors{}}, {route.StatefulSessionFilterName, emptyStatefulSession}, {wellknown.Router, &routerv3.Router{}}} {
		if f.name == route.StatefulSessionFilterName && !sessions {
			continue
		}
		a, _ := anypb.New(f.cfg) // empty well-known messages always encode
		filters = append(filters, &hcmv3.HttpFilter{Name: f.name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}})
	}
	cm := &hcmv3.HttpConnectionManager{
		StatPrefix: "outbound_" + model.ListenerName(port),
		// AUTO serves HTTP/1.1 and HTTP/2 (prior knowledge or ALPN) on
		// every port, which HTTP2 and GRPC servers need and HTTP ones
		// accept; Istio does the same.
		CodecType: hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeName,
		}},
		HttpFilters: filters,
		// The gateway is the edge: the client address is the peer's (or
		// the PROXY header's), X-Forwarded-For is appended to, and only
		// the entries the topology's trusted proxies added are believed.
		UseRemoteAddress:  wrapperspb.Bool(true),
		XffNumTrustedHops: topo.NumTrustedProxies,
		// Istio's default (BASE) path normalisation: RFC 3986 dot-segment
		// and case normalisation so "/a/../admin" cannot dodge a "/admin"
		// rule; escaped slashes are left alone and slashes not merged.
		NormalizePath:                wrapperspb.Bool(true),
		PathWithEscapedSlashesAction: hcmv3.HttpConnectionManager_KEEP_UNCHANGED,
		// Long-lived streams (gRPC streaming, websockets) must not be cut
		// by Envoy's 5 minute idle default; Istio disables it.
		StreamIdleTimeout: durationpb.New(0 * time.Second),
		UpgradeConfigs:    []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}},
	}
	applyClientCertDetails(cm, topo)
	// Where istiod's buildHTTPConnectionManager puts them: the access
	// loggers (setHTTPAccessLog), the tracing (configureTracing) and the
	// UUID request ID extension it always sets.
	cm.AccessLog = tel.GetHTTPAccessLogs()
	cm.Tracing = tel.GetTracing()
	cm.RequestIdExtension = tel.GetRequestIDExtension()
	return cm
}

// adsConfigSource fetches over the ADS stream, without Envoy's initial
// fetch timeout (0 disables it), as Istio configures every dynamic source.
func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		InitialFetchTimeout:   durationpb.New(0),
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}
