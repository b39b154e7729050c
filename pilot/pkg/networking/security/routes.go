package security

import (
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authn"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authz"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// targetsRoutes reports whether any policy targets a route object, so
// that the routes a gateway serves are only listed when one could apply.
func targetsRoutes(ras []authn.RequestAuthentication, aps []authz.Policy) bool {
	for _, r := range ras {
		if len(policyattach.RouteTargets(r.Namespace, r.Spec)) > 0 {
			return true
		}
	}
	for _, a := range aps {
		if len(policyattach.RouteTargets(a.Namespace, a.Spec)) > 0 {
			return true
		}
	}
	return false
}

// servedRoutes are the route objects p's gateways serve — the
// VirtualServices bound to them, and the HTTPRoutes and GRPCRoutes the
// Gateway API conversion turned into VirtualServices — with each one's
// route origin (the stat_prefix its Envoy routes begin with).
func servedRoutes(push *model.PushContext, p *model.Proxy) ([]policyattach.RouteRef, map[policyattach.RouteRef]string) {
	origins := map[policyattach.RouteRef]string{}
	var out []policyattach.RouteRef
	add := func(ref policyattach.RouteRef) {
		if _, ok := origins[ref]; ok {
			return
		}
		origins[ref] = route.Origin(string(ref.Kind), ref.Namespace, ref.Name)
		out = append(out, ref)
	}
	for _, gw := range push.GatewaysForProxy(p) {
		for _, vs := range push.VirtualServicesBoundTo(gw.Namespace + "/" + gw.Name) {
			if vs.Annotations[model.GatewayAPIRoutesAnnotation] == "" {
				add(policyattach.RouteRef{Kind: policyattach.VirtualService, Namespace: vs.Namespace, Name: vs.Name})
				continue
			}
			var names []string
			for _, h := range vs.Spec.(*networking.VirtualService).GetHttp() {
				names = append(names, h.GetName())
			}
			for _, o := range route.GatewayAPIOrigins(names) {
				if ref, ok := refOfOrigin(o); ok {
					add(ref)
				}
			}
		}
	}
	return out, origins
}

// refOfOrigin reads a Gateway API route's origin back ("httproute/NS/NAME");
// Kubernetes names hold no "_", so the stat token is the name.
func refOfOrigin(o string) (policyattach.RouteRef, bool) {
	var kind policyattach.RouteKind
	var rest string
	switch {
	case len(o) > len("httproute/") && o[:len("httproute/")] == "httproute/":
		kind, rest = policyattach.HTTPRoute, o[len("httproute/"):]
	case len(o) > len("grpcroute/") && o[:len("grpcroute/")] == "grpcroute/":
		kind, rest = policyattach.GRPCRoute, o[len("grpcroute/"):]
	default:
		return policyattach.RouteRef{}, false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] == '/' {
			return policyattach.RouteRef{Kind: kind, Namespace: rest[:i], Name: rest[i+1:]}, true
		}
	}
	return policyattach.RouteRef{}, false
}

// routeConfigs merges the route-level configs of both translators, by
// route origin: authz's RBACPerRoute entries and authn's jwt_authn
// requirement. A requirement whose per-route config cannot be encoded
// (it always can) is a problem; the route keeps its authorization
// configs, which only narrow.
func routeConfigs(an authn.Result, az authz.Result, origins map[policyattach.RouteRef]string, problems []*config.Error) (map[string]map[string]*anypb.Any, []*config.Error) {
	out := map[string]map[string]*anypb.Any{}
	set := func(ref policyattach.RouteRef, name string, a *anypb.Any) {
		o := origins[ref]
		if o == "" {
			return
		}
		if out[o] == nil {
			out[o] = map[string]*anypb.Any{}
		}
		out[o][name] = a
	}
	for ref, cfgs := range az.RouteConfigs {
		for name, a := range cfgs {
			set(ref, name, a)
		}
	}
	for ref, req := range an.RouteRequirements {
		a, err := authn.PerRouteConfig(req)
		if err != nil {
			problems = append(problems, &config.Error{Message: "route " + ref.String() + ": JWT requirement " + req + " cannot be encoded: " + err.Error()})
			continue
		}
		set(ref, authn.FilterName, a)
	}
	if len(out) == 0 {
		return nil, problems
	}
	return out, problems
}
