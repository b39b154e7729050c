package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// policyKind says how a kind of policy (Telemetry, RequestAuthentication,
// AuthorizationPolicy) reaches gateways, for the target check they share.
type policyKind struct {
	// name is the kind, as messages write it.
	name string
	// rootNamespace is the namespace whose selector policies select
	// gateway proxies of every namespace (istiod's authn and authz
	// policies); "" when selector policies apply only to proxies of
	// their own namespace (Telemetry).
	rootNamespace string
	// routes allows targetRefs to an HTTPRoute, a GRPCRoute or a
	// VirtualService, which scope the policy to that route (Wayfinder's
	// route-level security policies, beyond istiod).
	routes bool
}

// policyTargets warns about a policy c (spec) that selects no gateway: a
// selector that no Gateway's selector labels satisfy, a targetRef to a
// Gateway API Gateway that does not exist or is of another namespace,
// targetRefs to kinds that never attach to a gateway (Service,
// ServiceEntry, GatewayClass are sidecar and waypoint targets in
// istiod), and, for kinds that may target routes, a targetRef to a route
// that no gateway serves. Namespace-wide policies apply to whatever proxy
// runs in their namespace and are not checked.
//
// Analysis has no proxies: a gateway proxy is assumed to carry exactly
// its Gateway's selector labels, in the policy's namespace for an Istio
// Gateway (whose proxies may run anywhere) and in the Gateway's own
// namespace for a Gateway API Gateway (deployed beside it).
func policyTargets(push *model.PushContext, routes *routeIndex, k policyKind, c config.Config, spec policyattach.Targetable) []*config.Error {
	if policyattach.NamespaceWide(spec) {
		return nil
	}
	var out []*config.Error
	warn := func(field, format string, args ...any) {
		out = append(out, &config.Error{Key: c.Key(), Field: field, Warning: true, Message: fmt.Sprintf(format, args...)})
	}
	refs := policyattach.TargetRefs(spec)
	if len(refs) == 0 {
		if !selectsAnyGateway(push, k.rootNamespace, c.Namespace, spec) {
			warn("spec.selector", "selects no gateway: no Gateway's selector includes the labels %s, so no gateway proxy is known to carry them",
				labelString(spec.GetSelector().GetMatchLabels()))
		}
		return out
	}
	for i, ref := range refs {
		f := targetRefField(spec, i)
		route, isRoute := routeRefOf(ref)
		switch {
		case isRoute && k.routes:
			switch {
			case ref.GetNamespace() != "" && ref.GetNamespace() != c.Namespace:
				warn(f, "%s %s/%s is in another namespace: %s applies only to routes of its own namespace",
					ref.GetKind(), ref.GetNamespace(), ref.GetName(), article(k.name))
			case routes.served(route.inNamespace(c.Namespace)) == nil:
				warn(f, "selects no route: %s", routes.whyNotServed(route.inNamespace(c.Namespace)))
			}
		case !policyattach.IsGatewayRef(ref):
			what := "a gateway"
			if k.routes {
				what = "a gateway or a route"
			}
			warn(f, "%s %q is not %s: %s targeting it applies to no gateway proxy", ref.GetKind(), ref.GetName(), what, article(k.name))
		case ref.GetNamespace() != "" && ref.GetNamespace() != c.Namespace:
			warn(f, "Gateway %s/%s is in another namespace: %s applies only to gateways of its own namespace", ref.GetNamespace(), ref.GetName(), article(k.name))
		case !gatewayAPIGatewayExists(push, c.Namespace, ref.GetName()):
			warn(f, "selects no gateway: Gateway %s/%s does not exist", c.Namespace, ref.GetName())
		}
	}
	return out
}

// targetRefField is the field of the i-th of spec's target references:
// spec.targetRefs[i], or spec.targetRef for the legacy single one.
func targetRefField(spec policyattach.Targetable, i int) string {
	if len(spec.GetTargetRefs()) == 0 {
		return "spec.targetRef"
	}
	return fmt.Sprintf("spec.targetRefs[%d]", i)
}

// selectsAnyGateway reports whether a proxy carrying some Gateway's
// selector labels would be selected by spec, a policy of namespace ns.
func selectsAnyGateway(push *model.PushContext, root, ns string, spec policyattach.Targetable) bool {
	for _, gw := range push.Gateways() {
		labels := gw.Spec.(*networking.Gateway).GetSelector()
		proxyNS := ns
		if _, isGatewayAPI := labels[policyattach.GatewayNameLabel]; isGatewayAPI {
			proxyNS = gw.Namespace
		}
		if (proxyNS == ns || (root != "" && ns == root)) &&
			policyattach.Selects(policyattach.Proxy{Namespace: proxyNS, Labels: labels}, ns, spec) {
			return true
		}
	}
	return false
}

// gatewayAPIGatewayExists reports whether the Gateway API Gateway ns/name
// is among the push's gateways (converted to Gateways selecting its
// deployment's label).
func gatewayAPIGatewayExists(push *model.PushContext, ns, name string) bool {
	for _, gw := range push.Gateways() {
		if gw.Namespace == ns && gw.Spec.(*networking.Gateway).GetSelector()[policyattach.GatewayNameLabel] == name {
			return true
		}
	}
	return false
}

// routeRefOf reads a targetRef to a route object: an HTTPRoute or
// GRPCRoute of the Gateway API, or an Istio VirtualService. Its namespace
// is the ref's (empty: the policy's).
func routeRefOf(ref *typev1beta1.PolicyTargetReference) (routeRef, bool) {
	group := policyattach.CanonicalGroup(ref.GetGroup())
	var kind string
	switch {
	case group == policyattach.GatewayAPIGroup && (ref.GetKind() == kindHTTPRoute || ref.GetKind() == kindGRPCRoute):
		kind = ref.GetKind()
	case group == "networking.istio.io" && ref.GetKind() == kindVirtualService:
		kind = kindVirtualService
	default:
		return routeRef{}, false
	}
	return routeRef{kind: kind, namespace: ref.GetNamespace(), name: ref.GetName()}, true
}

// article is "a KIND" or "an KIND".
func article(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

func labelString(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
