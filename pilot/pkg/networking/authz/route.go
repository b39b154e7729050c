package authz

import (
	"cmp"
	"fmt"
	"slices"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// The route-level RBAC filters: one per action, named apart from the
// gateway-level ones (envoy.filters.http.rbac) because Envoy looks
// typed_per_filter_config up by filter name, so a per-route config under
// the common name would replace every RBAC filter's config on that route,
// the gateway's DENY and ALLOW included. Their own config has no rules:
// they do nothing on routes without a per-route config.
const (
	RouteAuditFilterName = "wayfinder.filters.http.rbac.route.audit"
	RouteDenyFilterName  = "wayfinder.filters.http.rbac.route.deny"
	RouteAllowFilterName = "wayfinder.filters.http.rbac.route.allow"
)

// routeTargets are the routes p targets: HTTPRoutes, GRPCRoutes and
// VirtualServices of its own namespace.
func routeTargets(p Policy) []policyattach.RouteRef {
	return policyattach.RouteTargets(p.Namespace, p.Spec)
}

// selectRoutePolicies returns, for each served route, the policies that
// target it and do not apply to the gateway as a whole (gateway-level
// ones already apply to every route), oldest first.
func selectRoutePolicies(policies []Policy, routes []policyattach.RouteRef, gatewayLevel []Policy) map[policyattach.RouteRef][]Policy {
	served := map[policyattach.RouteRef]bool{}
	for _, r := range routes {
		served[r] = true
	}
	isGW := map[config.Key]bool{}
	for _, p := range gatewayLevel {
		isGW[keyOf(p)] = true
	}
	out := map[policyattach.RouteRef][]Policy{}
	for _, p := range sortByCreation(policies) {
		if p.Spec == nil || isGW[keyOf(p)] {
			continue
		}
		for _, r := range routeTargets(p) {
			if served[r] && !slices.ContainsFunc(out[r], func(q Policy) bool { return keyOf(q) == keyOf(p) }) {
				out[r] = append(out[r], p)
			}
		}
	}
	return out
}

// buildRoutes adds the route-level filters and per-route configs to r.
// A route's policies are translated exactly as gateway-level ones are
// (names, dry-run, fail-closed rule); they add to the gateway's: a
// request to the route passes the gateway's CUSTOM, DENY and ALLOW
// filters, then the route's DENY and ALLOW. CUSTOM cannot target a route:
// such a policy denies what it matches on that route, as istiod serves a
// CUSTOM policy it cannot serve.
func (b *builder) buildRoutes(r *Result, byRoute map[policyattach.RouteRef][]Policy) {
	routes := make([]policyattach.RouteRef, 0, len(byRoute))
	for rt := range byRoute {
		routes = append(routes, rt)
	}
	slices.SortFunc(routes, func(a, b policyattach.RouteRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	used := map[string]bool{}
	var applied []config.Key
	for _, rt := range routes {
		var audit, deny, allow []Policy
		for _, p := range byRoute[rt] {
			if !slices.Contains(applied, keyOf(p)) {
				applied = append(applied, keyOf(p))
			}
			switch p.Spec.GetAction() {
			case securityv1beta1.AuthorizationPolicy_ALLOW:
				allow = append(allow, p)
			case securityv1beta1.AuthorizationPolicy_DENY:
				deny = append(deny, p)
			case securityv1beta1.AuthorizationPolicy_AUDIT:
				audit = append(audit, p)
			case securityv1beta1.AuthorizationPolicy_CUSTOM:
				b.problem(p, "spec.targetRefs", fmt.Sprintf("CUSTOM policies cannot target a route (%s): "+
					"the policy's rules deny what they match on it instead", rt), false)
				deny = append(deny, p)
			default:
				b.problem(p, "spec.action", fmt.Sprintf("unknown action %v: the policy is ignored, as in istiod", p.Spec.GetAction()), false)
			}
		}
		for _, g := range []struct {
			policies []Policy
			action   rbacv3.RBAC_Action
			filter   string
		}{
			{audit, rbacv3.RBAC_LOG, RouteAuditFilterName},
			{deny, rbacv3.RBAC_DENY, RouteDenyFilterName},
			{allow, rbacv3.RBAC_ALLOW, RouteAllowFilterName},
		} {
			if len(g.policies) == 0 {
				continue
			}
			c := b.build(g.policies, g.action, false, false)
			per := &rbachttpv3.RBACPerRoute{Rbac: &rbachttpv3.RBAC{
				Rules: c.rules, ShadowRules: c.shadow, ShadowRulesStatPrefix: shadowStatPrefix(c.shadow),
			}}
			a := b.pack(per, c, func() protoconv.Validatable {
				return &rbachttpv3.RBACPerRoute{Rbac: &rbachttpv3.RBAC{Rules: denyAll("invalid-authorization-policies")}}
			})
			if r.RouteConfigs == nil {
				r.RouteConfigs = map[policyattach.RouteRef]map[string]*anypb.Any{}
			}
			if r.RouteConfigs[rt] == nil {
				r.RouteConfigs[rt] = map[string]*anypb.Any{}
			}
			r.RouteConfigs[rt][g.filter] = a
			used[g.filter] = true
		}
	}
	for _, name := range []string{RouteAuditFilterName, RouteDenyFilterName, RouteAllowFilterName} {
		if used[name] {
			a, err := protoconv.ValidatedAny(&rbachttpv3.RBAC{})
			if err != nil {
				panic("authz: an empty RBAC does not validate: " + err.Error())
			}
			r.HTTPFilters = append(r.HTTPFilters, &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}})
		}
	}
	slices.SortFunc(applied, func(a, b config.Key) int { return cmp.Compare(a.String(), b.String()) })
	r.Applied = append(r.Applied, applied...)
}
