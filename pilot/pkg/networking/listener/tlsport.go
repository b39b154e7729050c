package listener

import (
	"fmt"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// sniClaims records which chain took each SNI name of a listener ("" for
// the chain matching any name): Envoy rejects a listener in which two
// filter chains match the same name.
type sniClaims map[string]string

// conflict returns the owner of the first of names already claimed.
func (c sniClaims) conflict(names []string) (name, owner string, taken bool) {
	if len(names) == 0 {
		names = []string{""}
	}
	for _, n := range names {
		if o, ok := c[n]; ok {
			return n, o, true
		}
	}
	return "", "", false
}

func (c sniClaims) claim(names []string, owner string) {
	if len(names) == 0 {
		names = []string{""}
	}
	for _, n := range names {
		c[n] = owner
	}
}

// buildTLSPortListener builds the listener of a port whose servers are
// told apart by SNI: a filter chain per HTTPS server (TLS terminated, HTTP
// routed by the server's own route configuration), one per terminating
// TLS server carrying TCP (its tcp route), and one per tls route match of
// a passthrough server (TLS left alone, forwarded by SNI). A TLS
// inspector reads the SNI. Chains Envoy would reject, or that would take
// a name another chain has, are reported and left out; without any chain
// there is no listener.
func buildTLSPortListener(push *model.PushContext, port uint32, https []model.HTTPSServer, tlsServers []model.TLSServer, errs *errorSet) *listenerv3.Listener {
	claims := sniClaims{}
	topo, tel := push.GatewayTopology(), push.GatewayTelemetry()
	var chains []*listenerv3.FilterChain
	var servers []model.GatewayServer
	for _, s := range https {
		servers = append(servers, s.GatewayServer)
		fc, err := httpsFilterChain(port, s, topo, tel, push.GatewaySecurity(), usesSessions(push, []model.GatewayServer{s.GatewayServer}))
		if err != nil {
			errs.add(&config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
				Message: fmt.Sprintf("filter chain for server %s on listener %s would be rejected by Envoy and is not built: %v", s.Server.GetPort().GetName(), model.ListenerName(port), err)})
			continue
		}
		claims.claim(s.ServerNames, serverOwner(s.GatewayServer))
		chains = append(chains, fc)
	}
	for _, s := range tlsServers {
		servers = append(servers, s.GatewayServer)
		if s.Passthrough {
			continue
		}
		if fc := terminatingTCPChain(push, port, s, errs); fc != nil {
			claims.claim(s.ServerNames, serverOwner(s.GatewayServer))
			chains = append(chains, fc)
		}
	}
	for _, s := range tlsServers {
		if s.Passthrough {
			chains = append(chains, passthroughChains(l4Context{push: push, server: s.GatewayServer, errs: errs}, s.ServerNames, claims)...)
		}
	}
	if len(chains) == 0 {
		return nil
	}
	l := gatewayListener(port, topo, tel, chains)
	// SNI and ALPN are only known once the TLS inspector has read the
	// ClientHello; istiod adds it when a chain matches names or
	// terminates TLS, as here.
	if slices.ContainsFunc(chains, func(fc *listenerv3.FilterChain) bool {
		return len(fc.GetFilterChainMatch().GetServerNames()) > 0 || fc.GetTransportSocket() != nil
	}) {
		inspector, _ := anypb.New(&tlsinspectorv3.TlsInspector{}) // an empty well-known message always encodes
		// After the PROXY protocol filter, if any: the PROXY header
		// comes before the ClientHello.
		l.ListenerFilters = append(l.ListenerFilters, &listenerv3.ListenerFilter{
			Name:       wellknown.TlsInspector,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: inspector},
		})
	}
	if err := l.ValidateAll(); err != nil {
		for _, s := range servers {
			errs.add(&config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
				Message: fmt.Sprintf("listener %s would be rejected by Envoy and is not built: %v", model.ListenerName(port), err)})
		}
		return nil
	}
	return l
}

func serverOwner(s model.GatewayServer) string { return s.Gateway.String() + " " + s.Field("") }

// terminatingTCPChain is the chain of a TLS server that terminates TLS and
// forwards the TCP inside by its tcp route, or nil (reported) without one.
func terminatingTCPChain(push *model.PushContext, port uint32, s model.TLSServer, errs *errorSet) *listenerv3.FilterChain {
	c := l4Context{push: push, server: s.GatewayServer, errs: errs}
	vs, r, field, ok := c.tcpRoute()
	if !ok {
		errs.add(&config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
			Message: fmt.Sprintf("no VirtualService bound to this Gateway has a tcp route for port %d and these hosts; the server gets no filter chain", port)})
		return nil
	}
	proxy, ok := c.tcpProxy(vs, r.GetRoute(), field)
	if !ok {
		return nil
	}
	tlsCtx, err := downstreamTLS(s.GatewayServer, s.Credential)
	if err == nil {
		err = tlsCtx.ValidateAll()
	}
	var tlsAny *anypb.Any
	if err == nil {
		tlsAny, err = anypb.New(tlsCtx)
	}
	if err != nil {
		errs.add(&config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field("tls"),
			Message: fmt.Sprintf("filter chain for server %s on listener %s would be rejected by Envoy and is not built: %v", s.Server.GetPort().GetName(), model.ListenerName(port), err)})
		return nil
	}
	fc := &listenerv3.FilterChain{
		TransportSocket: &corev3.TransportSocket{Name: wellknown.TransportSocketTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tlsAny}},
		Filters:         c.networkFilters(proxy),
	}
	if len(s.ServerNames) > 0 {
		fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: s.ServerNames}
	}
	return fc
}

// buildTCPListener is the listener of a plain TCP server: one chain
// forwarding every connection by the server's tcp route. Without a route
// there is no listener, and the server is reported.
func buildTCPListener(push *model.PushContext, port uint32, s model.GatewayServer, errs *errorSet) *listenerv3.Listener {
	c := l4Context{push: push, server: s, errs: errs}
	vs, r, field, ok := c.tcpRoute()
	if !ok {
		errs.add(&config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
			Message: fmt.Sprintf("no VirtualService bound to this Gateway has a tcp route for port %d and these hosts; listener %s is not built", port, model.ListenerName(port))})
		return nil
	}
	proxy, ok := c.tcpProxy(vs, r.GetRoute(), field)
	if !ok {
		return nil
	}
	l := gatewayListener(port, push.GatewayTopology(), push.GatewayTelemetry(), []*listenerv3.FilterChain{{Filters: c.networkFilters(proxy)}})
	if err := l.ValidateAll(); err != nil {
		errs.add(&config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(""),
			Message: fmt.Sprintf("listener %s would be rejected by Envoy and is not built: %v", model.ListenerName(port), err)})
		return nil
	}
	return l
}

// lowerAll lower-cases host names for SNI matching.
func lowerAll(in []string) []string {
	out := make([]string, len(in))
	for i, h := range in {
		out[i] = strings.ToLower(h)
	}
	return out
}
