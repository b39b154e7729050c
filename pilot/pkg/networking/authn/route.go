package authn

import (
	"cmp"
	"fmt"
	"slices"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// routeRequirements adds, for each served route with its own policies, the
// providers of those policies' rules and a requirement_map entry whose
// requirement is istiod's over the gateway's rules and the route's
// together (per-route config replaces the filter's rules on that route, so
// the gateway's providers must be in it too).
func (b *builder) routeRequirements(filter *jwtv3.JwtAuthentication, gwRules []*rule, byRoute map[policyattach.RouteRef][]RequestAuthentication) {
	routes := make([]policyattach.RouteRef, 0, len(byRoute))
	for r := range byRoute {
		routes = append(routes, r)
	}
	slices.SortFunc(routes, func(a, b policyattach.RouteRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	// One provider per rule of a route-level policy, however many routes
	// it targets, named for the policy so that names do not shift when
	// another route's policies change.
	built := map[string]bool{}
	var applied []config.Key
	for _, route := range routes {
		policies := byRoute[route]
		own := sortedRules(policies)
		for _, r := range own {
			r.provider = fmt.Sprintf("route-origins-%s/%s-%d", r.policy.Namespace, r.policy.Name, r.index)
			if !built[r.provider] {
				built[r.provider] = true
				filter.Providers[r.provider] = b.provider(r)
			}
		}
		all := append(slices.Clone(gwRules), own...)
		slices.SortStableFunc(all, func(a, b *rule) int { return cmp.Compare(a.spec.GetIssuer(), b.spec.GetIssuer()) })
		names := make([]string, 0, len(all))
		for _, r := range all {
			names = append(names, r.provider)
		}
		for _, p := range policies {
			if !slices.Contains(applied, p.Key()) {
				applied = append(applied, p.Key())
			}
		}
		req := requirement(names)
		if req == nil {
			// Policies without rules, on a gateway without any: nothing
			// to verify, so no per-route config either.
			continue
		}
		if filter.RequirementMap == nil {
			filter.RequirementMap = map[string]*jwtv3.JwtRequirement{}
		}
		name := routeName(route)
		filter.RequirementMap[name] = req
		if b.res.RouteRequirements == nil {
			b.res.RouteRequirements = map[policyattach.RouteRef]string{}
		}
		b.res.RouteRequirements[route] = name
	}
	slices.SortFunc(applied, func(a, b config.Key) int { return cmp.Compare(a.String(), b.String()) })
	b.res.Applied = append(b.res.Applied, applied...)
}

// PerRouteConfig is the typed_per_filter_config value, under FilterName,
// for the routes of a route object with a requirement in
// Result.RouteRequirements.
func PerRouteConfig(requirementName string) (*anypb.Any, error) {
	return protoconv.ValidatedAny(&jwtv3.PerRouteConfig{
		RequirementSpecifier: &jwtv3.PerRouteConfig_RequirementName{RequirementName: requirementName},
	})
}
