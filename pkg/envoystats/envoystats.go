// Package envoystats is the stats_config Wayfinder's gateway bootstraps
// carry: tags that take the virtual host and the route out of the names of
// Envoy's per-route statistics, so that every route's counters share one
// Prometheus name and carry the route as a label.
//
// Envoy names a route's statistics
// vhost.<virtual host>.route.<stat_prefix>.<stat>, and its default tags
// read both the virtual host and the route as one dot-free token. Gateway
// virtual hosts are named "host:port" (istiod's names, which have dots),
// so the defaults extract only the host's first label and leave the rest,
// and the route, in the metric name. The two tags here match the whole
// virtual host and the stat prefix (which Wayfinder's route translation
// keeps free of dots) from the end of the name, so
//
//	vhost.shop.example.com:80.route.vs/default/shop/http/0.upstream_rq_200
//
// becomes envoy_vhost_route_upstream_rq{virtual_host="shop.example.com:80",
// route="vs/default/shop/http/0", envoy_response_code="200"} on
// /stats/prometheus. Envoy's default tags still apply besides: its
// envoy_virtual_host holds only the first label of a dotted host, and its
// envoy_route is set only where the host has no dots (then equal to
// route) or, wrongly, where the host's second label is "route".
package envoystats

import (
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	// VirtualHostTag is the tag (Prometheus label) holding a route
	// statistic's whole virtual host name, RouteTag its stat prefix. They
	// are not Envoy's envoy.virtual_host and envoy.route: of two
	// extractors of one tag name the first that matches wins, and Envoy's
	// own run first and match wrongly on dotted hosts.
	VirtualHostTag = "virtual_host"
	RouteTag       = "route"

	// Envoy's tag regexes: the first group is cut from the name, the
	// second is the value. Both anchor at the end, where a route
	// statistic has the stat prefix and one stat token, so a ".route." in
	// a host name is never taken for the route.
	virtualHostRegex = `^vhost\.((.+)\.)route\.[^.]+\.[^.]+$`
	routeRegex       = `^vhost\..+\.route\.(([^.]+)\.)[^.]+$`
)

// RouteTags are the tag specifiers for per-route statistics.
func RouteTags() []*metricsv3.TagSpecifier {
	return []*metricsv3.TagSpecifier{
		{TagName: VirtualHostTag, TagValue: &metricsv3.TagSpecifier_Regex{Regex: virtualHostRegex}},
		{TagName: RouteTag, TagValue: &metricsv3.TagSpecifier_Regex{Regex: routeRegex}},
	}
}

// StatsConfig is a gateway bootstrap's stats_config: Envoy's default tags
// and RouteTags.
func StatsConfig() *metricsv3.StatsConfig {
	return &metricsv3.StatsConfig{UseAllDefaultTags: wrapperspb.Bool(true), StatsTags: RouteTags()}
}
