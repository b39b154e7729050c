package route

import (
	"maps"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// Origin is the part of a route's stat_prefix (stats.go) that names the
// object it came from: "vs/NS/NAME", "httproute/NS/NAME" or
// "grpcroute/NS/NAME". kind is "VirtualService", "HTTPRoute" or
// "GRPCRoute"; any other kind has no origin.
func Origin(kind, namespace, name string) string {
	var k string
	switch kind {
	case "VirtualService":
		k = "vs"
	case "HTTPRoute":
		k = "httproute"
	case "GRPCRoute":
		k = "grpcroute"
	default:
		return ""
	}
	return k + "/" + statToken(namespace) + "/" + statToken(name)
}

// originOf is the Origin of a route by its stat_prefix, "" for none.
func originOf(statPrefix string) string {
	parts := strings.SplitN(statPrefix, "/", 4)
	if len(parts) < 4 {
		return ""
	}
	return parts[0] + "/" + parts[1] + "/" + parts[2]
}

// GatewayAPIOrigins are the Origins of the routes of a VirtualService the
// Gateway API conversion generated, read from its HTTP routes' names
// (model.GatewayAPIRoutesAnnotation).
func GatewayAPIOrigins(httpRouteNames []string) []string {
	var out []string
	for _, n := range httpRouteNames {
		if p, ok := gatewayAPIStatPrefix(n); ok {
			if o := originOf(p); o != "" && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// ApplySecurity puts the route-level authentication and authorization of
// sec (model.GatewaySecurity.RouteConfigs: per origin, filter name ->
// typed_per_filter_config) on every route generated from a targeted
// object. Route configurations it changes are copies: the translated
// ones are shared with other gateway groups and the route cache.
func ApplySecurity(routes []*routev3.RouteConfiguration, sec *model.GatewaySecurity) []*routev3.RouteConfiguration {
	if len(sec.GetRouteConfigs()) == 0 {
		return routes
	}
	out := slices.Clone(routes)
	for i, rc := range routes {
		if !touches(rc, sec.RouteConfigs) {
			continue
		}
		cp := proto.Clone(rc).(*routev3.RouteConfiguration)
		for _, vh := range cp.GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				cfgs := sec.RouteConfigs[originOf(r.GetStatPrefix())]
				if len(cfgs) == 0 {
					continue
				}
				if r.TypedPerFilterConfig == nil {
					r.TypedPerFilterConfig = map[string]*anypb.Any{}
				}
				for _, name := range slices.Sorted(maps.Keys(cfgs)) {
					r.TypedPerFilterConfig[name] = cfgs[name]
				}
			}
		}
		out[i] = cp
	}
	return out
}

func touches(rc *routev3.RouteConfiguration, cfgs map[string]map[string]*anypb.Any) bool {
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if _, ok := cfgs[originOf(r.GetStatPrefix())]; ok {
				return true
			}
		}
	}
	return false
}
