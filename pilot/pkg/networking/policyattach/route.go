package policyattach

// RouteKind is a kind of route object a policy can target (beyond
// istiod, whose gateways take policies per Gateway only).
type RouteKind string

// Route kinds targetRefs may name for route-level policies.
const (
	HTTPRoute      RouteKind = "HTTPRoute"
	GRPCRoute      RouteKind = "GRPCRoute"
	VirtualService RouteKind = "VirtualService"
)

// RouteRef names a route object served by a gateway.
type RouteRef struct {
	Kind      RouteKind
	Namespace string
	Name      string
}

func (r RouteRef) String() string { return string(r.Kind) + "/" + r.Namespace + "/" + r.Name }

// RouteTargets are the routes a policy of namespace ns targets:
// HTTPRoutes, GRPCRoutes and VirtualServices of its own namespace (a
// targetRef naming another namespace never matches, as for Gateways).
func RouteTargets(ns string, spec Targetable) []RouteRef {
	var out []RouteRef
	for _, ref := range TargetRefs(spec) {
		if ref.GetNamespace() != "" && ref.GetNamespace() != ns {
			continue
		}
		group := CanonicalGroup(ref.GetGroup())
		var kind RouteKind
		switch {
		case group == GatewayAPIGroup && ref.GetKind() == string(HTTPRoute):
			kind = HTTPRoute
		case group == GatewayAPIGroup && ref.GetKind() == string(GRPCRoute):
			kind = GRPCRoute
		case group == "networking.istio.io" && ref.GetKind() == string(VirtualService):
			kind = VirtualService
		default:
			continue
		}
		out = append(out, RouteRef{Kind: kind, Namespace: ns, Name: ref.GetName()})
	}
	return out
}
