package route

import (
	"strconv"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Per-route statistics. Every gateway route carries a stat_prefix naming
// the object and rule it came from, so that Envoy emits
// vhost.<virtual host>.route.<stat_prefix>.upstream_rq_* for it and the
// counters read as the config does (istiod sets none; see docs/config.md).
//
//	vs/<namespace>/<name>/http/<index>[/<route name>]  spec.http[index] of a VirtualService
//	httproute/<namespace>/<name>/rule/<index>          spec.rules[index] of an HTTPRoute
//	grpcroute/<namespace>/<name>/rule/<index>          spec.rules[index] of a GRPCRoute
//
// The matches of one rule share its prefix (and so its counters). A
// prefix is a single Envoy stat token: it holds no dots (Envoy splits stat
// names at dots, and its tag extraction reads the route as one token);
// a dot in an object name becomes "_", which Kubernetes names never hold,
// so two objects never share a prefix. Other characters of a route's free
// form name than letters, digits, "-" and "_" also become "_"; the index
// keeps such prefixes unique.

// routeStatPrefix is the stat_prefix of the routes of spec.http[index]
// (named name) of vs.
func routeStatPrefix(vs *config.Config, index int, name string) string {
	if vs.Annotations[model.GatewayAPIRoutesAnnotation] != "" {
		if p, ok := gatewayAPIStatPrefix(name); ok {
			return p
		}
	}
	out := "vs/" + statToken(vs.Namespace) + "/" + statToken(vs.Name) + "/http/" + strconv.Itoa(index)
	if name != "" {
		out += "/" + statToken(name)
	}
	return out
}

// gatewayAPIStatPrefix reads the origin from the name the Gateway API
// conversion gives each route it generates:
// "NS/NAME/rules/I/matches/J[/...]" for an HTTPRoute,
// "NS/NAME/grpc/rules/I/matches/J" for a GRPCRoute.
func gatewayAPIStatPrefix(name string) (string, bool) {
	parts := strings.Split(name, "/")
	kind := "httproute"
	if len(parts) >= 3 && parts[2] == "grpc" {
		kind = "grpcroute"
		parts = append(parts[:2:2], parts[3:]...)
	}
	if len(parts) < 6 || parts[0] == "" || parts[1] == "" || parts[2] != "rules" || parts[4] != "matches" {
		return "", false
	}
	if _, err := strconv.ParseUint(parts[3], 10, 32); err != nil {
		return "", false
	}
	return kind + "/" + statToken(parts[0]) + "/" + statToken(parts[1]) + "/rule/" + parts[3], true
}

// statToken makes s usable inside one stat token: letters, digits, "-"
// and "_" are kept, everything else (dots above all) becomes "_".
func statToken(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
