package envoyfilter

import (
	"slices"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"
)

// routePhase orders route configuration patches as istiod's
// ApplyRouteConfigurationPatches applies them: the configuration's MERGE,
// each virtual host's MERGE/REMOVE/REPLACE, its routes' MERGE/REMOVE,
// then route ADD/INSERT_*, and last VIRTUAL_HOST ADDs (which later
// patches do not see). -1: the patch does nothing to route configurations.
func routePhase(p *patch) int {
	op := p.operation
	switch p.applyTo {
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		if op == networking.EnvoyFilter_Patch_MERGE {
			return 0
		}
	case networking.EnvoyFilter_VIRTUAL_HOST:
		switch op {
		case networking.EnvoyFilter_Patch_MERGE, networking.EnvoyFilter_Patch_REMOVE, networking.EnvoyFilter_Patch_REPLACE:
			return 1
		case networking.EnvoyFilter_Patch_ADD:
			return 4
		}
	case networking.EnvoyFilter_HTTP_ROUTE:
		switch op {
		case networking.EnvoyFilter_Patch_MERGE, networking.EnvoyFilter_Patch_REMOVE:
			return 2
		case networking.EnvoyFilter_Patch_ADD, networking.EnvoyFilter_Patch_INSERT_AFTER,
			networking.EnvoyFilter_Patch_INSERT_BEFORE, networking.EnvoyFilter_Patch_INSERT_FIRST:
			return 3
		}
	}
	return -1
}

// patchRouteConfiguration applies p to rc (a clone it may change).
func patchRouteConfiguration(p *patch, rc *routev3.RouteConfiguration, portMap map[uint32][]uint32) bool {
	if !routeConfigurationMatch(rc, p, portMap) {
		return false
	}
	switch p.applyTo {
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		mergeProto(rc, p.value)
		return true
	case networking.EnvoyFilter_VIRTUAL_HOST:
		if p.operation == networking.EnvoyFilter_Patch_ADD {
			rc.VirtualHosts = append(rc.VirtualHosts, proto.Clone(p.value).(*routev3.VirtualHost))
			return true
		}
		matched := false
		removed := map[string]bool{}
		for i, vh := range rc.VirtualHosts {
			if !virtualHostMatch(vh, p) {
				continue
			}
			matched = true
			switch p.operation {
			case networking.EnvoyFilter_Patch_REMOVE:
				removed[vh.GetName()] = true
			case networking.EnvoyFilter_Patch_MERGE:
				mergeProto(vh, p.value)
			case networking.EnvoyFilter_Patch_REPLACE:
				rc.VirtualHosts[i] = proto.Clone(p.value).(*routev3.VirtualHost)
			}
		}
		if len(removed) > 0 {
			// istiod removes by name.
			rc.VirtualHosts = slices.DeleteFunc(rc.VirtualHosts, func(vh *routev3.VirtualHost) bool { return removed[vh.GetName()] })
		}
		return matched
	case networking.EnvoyFilter_HTTP_ROUTE:
		matched := false
		for _, vh := range rc.VirtualHosts {
			if virtualHostMatch(vh, p) && patchRoutes(p, vh) {
				matched = true
			}
		}
		return matched
	}
	return false
}

func patchRoutes(p *patch, vh *routev3.VirtualHost) bool {
	value := func() *routev3.Route { return proto.Clone(p.value).(*routev3.Route) }
	match := func(r *routev3.Route) bool { return routeMatch(r, p) }
	named := hasRouteMatch(p)
	switch p.operation {
	case networking.EnvoyFilter_Patch_MERGE:
		matched := false
		for _, r := range vh.Routes {
			if match(r) {
				mergeProto(r, p.value)
				matched = true
			}
		}
		return matched
	case networking.EnvoyFilter_Patch_REMOVE:
		n := len(vh.Routes)
		vh.Routes = slices.DeleteFunc(vh.Routes, match)
		return len(vh.Routes) != n
	case networking.EnvoyFilter_Patch_INSERT_FIRST:
		// Unlike filters, a route INSERT_FIRST naming a route inserts only
		// when that route is there.
		if named && index(vh.Routes, match) < 0 {
			return false
		}
		vh.Routes = append([]*routev3.Route{value()}, vh.Routes...)
		return true
	}
	var ok bool
	vh.Routes, ok = positional(p.operation, vh.Routes, named, match, value)
	return ok
}

// routeConfigurationMatch is istiod's for a gateway: the name, and the
// port number, port name and gateway parsed from the name
// ("http.PORT", "https.PORT.PORTNAME.GATEWAY.NAMESPACE").
func routeConfigurationMatch(rc *routev3.RouteConfiguration, p *patch, portMap map[uint32][]uint32) bool {
	m := p.match.GetRouteConfiguration()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != rc.GetName() {
		return false
	}
	port, portName, gateway := parseGatewayRouteName(rc.GetName())
	if m.GetPortName() != "" && m.GetPortName() != portName {
		return false
	}
	if m.GetGateway() != "" && m.GetGateway() != gateway {
		return false
	}
	if m.GetPortNumber() != 0 && !anyPortMatches(portMap, port, m.GetPortNumber()) {
		return false
	}
	return true
}

// parseGatewayRouteName is istiod's ParseGatewayRDSRouteName; gateway is
// "namespace/name".
func parseGatewayRouteName(name string) (port uint32, portName, gateway string) {
	atoi := func(s string) uint32 {
		n, _ := strconv.ParseUint(s, 10, 32)
		return uint32(n)
	}
	if rest, ok := strings.CutPrefix(name, "http."); ok {
		return atoi(rest), "", ""
	}
	if strings.HasPrefix(name, "https.") && strings.Count(name, ".") == 4 {
		parts := strings.Split(strings.TrimPrefix(name, "https."), ".")
		return atoi(parts[0]), parts[1], parts[3] + "/" + parts[2]
	}
	return 0, "", ""
}

func anyPortMatches(portMap map[uint32][]uint32, port, want uint32) bool {
	if ports, ok := portMap[port]; ok {
		return slices.Contains(ports, want)
	}
	return port == want
}

func virtualHostMatch(vh *routev3.VirtualHost, p *patch) bool {
	m := p.match.GetRouteConfiguration().GetVhost()
	if m == nil {
		return true
	}
	return (m.GetName() == "" || m.GetName() == vh.GetName()) &&
		(m.GetDomainName() == "" || slices.Contains(vh.GetDomains(), m.GetDomainName()))
}

func hasRouteMatch(p *patch) bool {
	return p.match.GetRouteConfiguration().GetVhost().GetRoute() != nil
}

func routeMatch(r *routev3.Route, p *patch) bool {
	m := p.match.GetRouteConfiguration().GetVhost().GetRoute()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != r.GetName() {
		return false
	}
	switch m.GetAction() {
	case networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_ANY:
		return true
	case networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_ROUTE:
		return r.GetRoute() != nil
	case networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_REDIRECT:
		return r.GetRedirect() != nil
	case networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_DIRECT_RESPONSE:
		return r.GetDirectResponse() != nil
	}
	return true
}
