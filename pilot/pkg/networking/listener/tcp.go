package listener

import (
	"fmt"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// l4Context is what translating the tcp and tls routes of one gateway
// server depends on. Problems are reported once each through errs.
type l4Context struct {
	push   *model.PushContext
	server model.GatewayServer
	errs   *errorSet
}

// networkFilters is a TCP chain's filters ending in proxy: istiod's
// buildNetworkFiltersStack puts the CUSTOM authorization and the RBAC
// network filters first.
func (c l4Context) networkFilters(proxy *listenerv3.Filter) []*listenerv3.Filter {
	return append(c.push.GatewaySecurity().NetworkFilters(), proxy)
}

// gatewayKey is the server's Gateway as VirtualServices name it, "ns/name".
func (c l4Context) gatewayKey() string {
	return c.server.Gateway.Namespace + "/" + c.server.Gateway.Name
}

// boundVirtualServices are the VirtualServices bound to the server's
// Gateway that have a host the server exposes, oldest first (Istio's
// order): those its tcp and tls routes may come from.
func (c l4Context) boundVirtualServices() []*config.Config {
	if c.push == nil {
		return nil
	}
	var out []*config.Config
	vss := c.push.VirtualServicesForGateway(c.gatewayKey())
	for i := range vss {
		vs := &vss[i]
		if _, ok := vs.Spec.(*networking.VirtualService); ok && c.exposes(vs) {
			out = append(out, vs)
		}
	}
	return out
}

// exposes reports whether some host of vs matches a host of the server
// that vs's namespace may bind ("ns/host", "./host", "*/host", "host").
func (c l4Context) exposes(vs *config.Config) bool {
	for _, sh := range c.server.Server.GetHosts() {
		ns, h, scoped := strings.Cut(sh, "/")
		if !scoped {
			h, ns = sh, "*"
		}
		if ns == "." {
			ns = c.server.Gateway.Namespace
		}
		if ns != "*" && ns != vs.Namespace {
			continue
		}
		for _, vh := range vs.Spec.(*networking.VirtualService).GetHosts() {
			if hostsMatch(strings.ToLower(h), c.push.ResolveShortname(vh, vs.Namespace)) {
				return true
			}
		}
	}
	return false
}

// hostsMatch reports whether two host patterns have a name in common.
func hostsMatch(a, b string) bool {
	covers := func(w, h string) bool {
		if w == "*" {
			return true
		}
		suffix, ok := strings.CutPrefix(w, "*")
		return ok && strings.HasSuffix(h, suffix)
	}
	return a == b || covers(a, b) || covers(b, a)
}

// l4Matches is Istio's match of a tcp or tls route's match entry: the
// port, when given, is the server's, and the gateways, when given, include
// the server's Gateway.
func (c l4Context) l4Matches(vs *config.Config, port uint32, gateways []string) bool {
	if port != 0 && port != c.server.Server.GetPort().GetNumber() {
		return false
	}
	if len(gateways) == 0 {
		return true
	}
	for _, g := range gateways {
		if model.ResolveGatewayName(g, vs.Namespace) == c.gatewayKey() {
			return true
		}
	}
	return false
}

// tcpRoute finds the tcp route that serves the server, as istiod does: the
// first route, in VirtualService order (oldest first) and then as
// written, whose match entries (any of them; none matches all) fit the
// server's port and Gateway. Later routes that would also fit are never
// used and are reported. ok is false when there is none.
func (c l4Context) tcpRoute() (vs *config.Config, r *networking.TCPRoute, field string, ok bool) {
	for _, v := range c.boundVirtualServices() {
		for i, tr := range v.Spec.(*networking.VirtualService).GetTcp() {
			if len(tr.GetRoute()) == 0 || !c.tcpMatches(v, tr) {
				continue
			}
			f := fmt.Sprintf("spec.tcp[%d]", i)
			if !ok {
				vs, r, field, ok = v, tr, f, true
				continue
			}
			c.errs.add(&config.Error{Source: v.Source, Key: v.Key(), Field: f, Warning: true,
				Message: fmt.Sprintf("never used on port %d of Gateway %s: VirtualService %s/%s %s comes first (creation time, then namespace/name, then as written)",
					c.server.Server.GetPort().GetNumber(), c.gatewayKey(), vs.Namespace, vs.Name, field)})
		}
	}
	return vs, r, field, ok
}

func (c l4Context) tcpMatches(vs *config.Config, tr *networking.TCPRoute) bool {
	for _, m := range tr.GetMatch() {
		if c.l4Matches(vs, m.GetPort(), m.GetGateways()) {
			return true
		}
	}
	return len(tr.GetMatch()) == 0
}

// tcpProxy is the network filter forwarding a connection to the route's
// destinations, named as istiod names it: one destination is the cluster
// itself, with the cluster name as stat prefix; several are weighted
// clusters (zero weights left out), with stat prefix "VS.NAMESPACE". The
// DestinationRule of the first destination's host sets the idle timeout,
// the maximum connection duration and source-IP hashing. ok is false when
// a destination cannot be resolved.
func (c l4Context) tcpProxy(vs *config.Config, dsts []*networking.RouteDestination, field string) (*listenerv3.Filter, bool) {
	port := c.server.Server.GetPort().GetNumber()
	var clusters []*tcpv3.TcpProxy_WeightedCluster_ClusterWeight
	var first route.Destination
	for i, rd := range dsts {
		if len(dsts) > 1 && rd.GetWeight() <= 0 {
			continue
		}
		d, ok := c.resolve(vs, rd.GetDestination(), port, fmt.Sprintf("%s.route[%d].destination", field, i))
		if !ok {
			return nil, false
		}
		if len(clusters) == 0 {
			first = d
		}
		clusters = append(clusters, &tcpv3.TcpProxy_WeightedCluster_ClusterWeight{Name: d.Cluster, Weight: uint32(rd.GetWeight())})
	}
	if len(clusters) == 0 {
		c.errs.add(&config.Error{Source: vs.Source, Key: vs.Key(), Field: field + ".route",
			Message: "every destination has weight 0; at least one needs a positive weight; route not used"})
		return nil, false
	}
	// istiod's setAccessLogAndBuildTCPFilter: every TCP proxy of a
	// gateway (TCP, TLS passthrough and terminated TLS) logs.
	tp := &tcpv3.TcpProxy{AccessLog: c.push.GatewayTelemetry().GetTCPAccessLogs()}
	subset := ""
	if len(dsts) == 1 {
		tp.StatPrefix = first.Cluster
		tp.ClusterSpecifier = &tcpv3.TcpProxy_Cluster{Cluster: first.Cluster}
		subset = first.Subset
	} else {
		tp.StatPrefix = vs.Name + "." + vs.Namespace
		tp.ClusterSpecifier = &tcpv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpv3.TcpProxy_WeightedCluster{Clusters: clusters}}
	}
	if dr := c.push.DestinationRuleForHost(first.Host); dr != nil {
		spec := dr.Spec.(*networking.DestinationRule)
		tcpPool := spec.GetTrafficPolicy().GetConnectionPool().GetTcp()
		tp.IdleTimeout = tcpPool.GetIdleTimeout()
		tp.MaxDownstreamConnectionDuration = tcpPool.GetMaxConnectionDuration()
		if useSourceIP(spec, subset) {
			tp.HashPolicy = []*typev3.HashPolicy{{PolicySpecifier: &typev3.HashPolicy_SourceIp_{SourceIp: &typev3.HashPolicy_SourceIp{}}}}
		}
	}
	if err := tp.ValidateAll(); err != nil {
		c.errs.add(&config.Error{Source: vs.Source, Key: vs.Key(), Field: field, Message: fmt.Sprintf("TCP proxy would be rejected by Envoy; route not used: %v", err)})
		return nil, false
	}
	a, err := anypb.New(tp)
	if err != nil {
		c.errs.add(&config.Error{Source: vs.Source, Key: vs.Key(), Field: field, Message: "cannot encode TCP proxy: " + err.Error()})
		return nil, false
	}
	return &listenerv3.Filter{Name: wellknown.TCPProxy, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}, true
}

// resolve names a destination's cluster. As istiod does for TCP, a
// destination without a port takes its service's only port, else the
// gateway server's port.
func (c l4Context) resolve(vs *config.Config, dst *networking.Destination, serverPort uint32, field string) (route.Destination, bool) {
	if dst != nil && dst.GetPort().GetNumber() == 0 {
		host := c.push.ResolveShortname(dst.GetHost(), vs.Namespace)
		if svc := c.push.ServiceForHost(host); svc == nil || len(svc.Ports) != 1 {
			withPort := &networking.Destination{Host: dst.GetHost(), Subset: dst.GetSubset(), Port: &networking.PortSelector{Number: serverPort}}
			dst = withPort
		}
	}
	d, errs, ok := route.ResolveDestination(c.push, vs, dst, field)
	for _, e := range errs {
		c.errs.add(e)
	}
	return d, ok
}

// useSourceIP is istiod's rule for hashing TCP connections by client
// address: the rule's consistentHash.useSourceIp, which a subset with its
// own load balancer settings replaces.
func useSourceIP(dr *networking.DestinationRule, subset string) bool {
	use := dr.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash().GetUseSourceIp()
	for _, s := range dr.GetSubsets() {
		if s.GetName() != subset {
			continue
		}
		if lb := s.GetTrafficPolicy().GetLoadBalancer(); lb != nil {
			use = lb.GetConsistentHash().GetUseSourceIp()
		}
		break
	}
	return use
}

// errorSet collects problems, each once, in the order first found: one
// VirtualService is looked at for every server of its Gateway.
type errorSet struct {
	list []*config.Error
	seen map[string]bool
}

func (s *errorSet) add(e *config.Error) {
	k := e.Error()
	if e.Warning {
		k = "W " + k
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[k] {
		s.seen[k] = true
		s.list = append(s.list, e)
	}
}
