package cli

import (
	"fmt"
	"strconv"
	"strings"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

func listenerRows(s *admin.ListenersConfigDump) ([]string, [][]string, error) {
	header := []string{"NAME", "ADDRESS", "PORT", "MATCH", "DESTINATION"}
	var rows [][]string
	for _, d := range s.GetDynamicListeners() {
		l := &listenerv3.Listener{}
		if err := d.GetActiveState().GetListener().UnmarshalTo(l); err != nil {
			return nil, nil, fmt.Errorf("listener %s: %w", d.GetName(), err)
		}
		addr, port := socketAddress(l.GetAddress())
		if api := l.GetApiListener().GetApiListener(); api != nil {
			// Proxyless gRPC: a listener per service, no sockets.
			rows = append(rows, []string{l.GetName(), "-", "-", "API listener", hcmRoute(api)})
			continue
		}
		for _, fc := range l.GetFilterChains() {
			match := "ALL"
			if sni := fc.GetFilterChainMatch().GetServerNames(); len(sni) > 0 {
				match = "SNI: " + strings.Join(sni, ",")
			}
			dest := "-"
			for _, f := range fc.GetFilters() {
				if r := hcmRoute(f.GetTypedConfig()); r != "" {
					dest = r
				}
			}
			rows = append(rows, []string{l.GetName(), addr, port, match, dest})
		}
	}
	return header, rows, nil
}

// hcmRoute names the routes an HTTP connection manager uses: "Route:
// NAME" for RDS, "inline" for routes in place, "" for other filters.
func hcmRoute(a *anypb.Any) string {
	m := &hcm.HttpConnectionManager{}
	if a == nil || !a.MessageIs(m) || a.UnmarshalTo(m) != nil {
		return ""
	}
	if n := m.GetRds().GetRouteConfigName(); n != "" {
		return "Route: " + n
	}
	return "Route: inline"
}

func socketAddress(a *corev3.Address) (string, string) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "-", "-"
	}
	return sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10)
}

func routeRows(s *admin.RoutesConfigDump) ([]string, [][]string, error) {
	header := []string{"NAME", "VIRTUAL HOST", "DOMAINS", "MATCH", "ACTION"}
	var rows [][]string
	for _, d := range s.GetDynamicRouteConfigs() {
		rc := &routev3.RouteConfiguration{}
		if err := d.GetRouteConfig().UnmarshalTo(rc); err != nil {
			return nil, nil, fmt.Errorf("route configuration: %w", err)
		}
		for _, vh := range rc.GetVirtualHosts() {
			domains := strings.Join(vh.GetDomains(), ",")
			if len(vh.GetRoutes()) == 0 {
				rows = append(rows, []string{rc.GetName(), vh.GetName(), domains, "-", "-"})
			}
			for _, r := range vh.GetRoutes() {
				rows = append(rows, []string{rc.GetName(), vh.GetName(), domains, routeMatch(r.GetMatch()), routeAction(r)})
			}
		}
	}
	return header, rows, nil
}

func routeMatch(m *routev3.RouteMatch) string {
	var s string
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		s = p.Prefix + "*"
	case *routev3.RouteMatch_Path:
		s = p.Path
	case *routev3.RouteMatch_SafeRegex:
		s = "regex " + p.SafeRegex.GetRegex()
	case *routev3.RouteMatch_PathSeparatedPrefix:
		s = p.PathSeparatedPrefix + "/*"
	default:
		s = "/*"
	}
	if n := len(m.GetHeaders()); n > 0 {
		s += fmt.Sprintf(" +%d header", n)
	}
	if n := len(m.GetQueryParameters()); n > 0 {
		s += fmt.Sprintf(" +%d query", n)
	}
	return s
}

func routeAction(r *routev3.Route) string {
	switch a := r.GetAction().(type) {
	case *routev3.Route_Route:
		if c := a.Route.GetCluster(); c != "" {
			return c
		}
		var parts []string
		for _, wc := range a.Route.GetWeightedClusters().GetClusters() {
			parts = append(parts, fmt.Sprintf("%s %d", wc.GetName(), wc.GetWeight().GetValue()))
		}
		return strings.Join(parts, ", ")
	case *routev3.Route_Redirect:
		return "redirect"
	case *routev3.Route_DirectResponse:
		return fmt.Sprintf("direct response %d", a.DirectResponse.GetStatus())
	}
	return "-"
}

func clusterRows(s *admin.ClustersConfigDump) ([]string, [][]string, error) {
	header := []string{"SERVICE FQDN", "PORT", "SUBSET", "DIRECTION", "TYPE"}
	var rows [][]string
	for _, d := range s.GetDynamicActiveClusters() {
		c := &clusterv3.Cluster{}
		if err := d.GetCluster().UnmarshalTo(c); err != nil {
			return nil, nil, fmt.Errorf("cluster: %w", err)
		}
		typ := c.GetType().String()
		if c.GetClusterType() != nil {
			typ = c.GetClusterType().GetName()
		}
		// Istio's names: DIRECTION|PORT|SUBSET|HOST.
		if parts := strings.Split(c.GetName(), "|"); len(parts) == 4 {
			subset := parts[2]
			if subset == "" {
				subset = "-"
			}
			rows = append(rows, []string{parts[3], parts[1], subset, parts[0], typ})
			continue
		}
		rows = append(rows, []string{c.GetName(), "-", "-", "-", typ})
	}
	return header, rows, nil
}

func endpointRows(s *admin.EndpointsConfigDump) ([]string, [][]string, error) {
	header := []string{"ENDPOINT", "HEALTH", "WEIGHT", "LOCALITY", "CLUSTER"}
	var rows [][]string
	for _, d := range s.GetDynamicEndpointConfigs() {
		cla := &endpointv3.ClusterLoadAssignment{}
		if err := d.GetEndpointConfig().UnmarshalTo(cla); err != nil {
			return nil, nil, fmt.Errorf("endpoints: %w", err)
		}
		for _, le := range cla.GetEndpoints() {
			loc := le.GetLocality()
			locality := strings.Trim(strings.Join([]string{loc.GetRegion(), loc.GetZone(), loc.GetSubZone()}, "/"), "/")
			if locality == "" {
				locality = "-"
			}
			for _, e := range le.GetLbEndpoints() {
				addr, port := socketAddress(e.GetEndpoint().GetAddress())
				weight := "-"
				if w := e.GetLoadBalancingWeight(); w != nil {
					weight = strconv.FormatUint(uint64(w.GetValue()), 10)
				}
				rows = append(rows, []string{addr + ":" + port, e.GetHealthStatus().String(), weight, locality, cla.GetClusterName()})
			}
		}
	}
	return header, rows, nil
}

func secretRows(s *admin.SecretsConfigDump) ([]string, [][]string) {
	header := []string{"NAME", "VERSION"}
	var rows [][]string
	for _, d := range s.GetDynamicActiveSecrets() {
		rows = append(rows, []string{d.GetName(), shortVersion(d.GetVersionInfo())})
	}
	return header, rows
}
