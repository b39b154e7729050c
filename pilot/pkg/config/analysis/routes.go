package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// The route objects a security policy may target (beyond istiod).
const (
	kindHTTPRoute      = "HTTPRoute"
	kindGRPCRoute      = "GRPCRoute"
	kindVirtualService = "VirtualService"
)

// routeRef names a route object: an HTTPRoute, a GRPCRoute or a
// VirtualService.
type routeRef struct {
	kind, namespace, name string
}

// inNamespace completes a ref without namespace with the policy's.
func (r routeRef) inNamespace(ns string) routeRef {
	if r.namespace == "" {
		r.namespace = ns
	}
	return r
}

func (r routeRef) String() string { return r.kind + " " + r.namespace + "/" + r.name }

// hostRoutes are HTTP routes served for a set of hosts.
type hostRoutes struct {
	hosts []string
	http  []*networking.HTTPRoute
}

// servedRoute is a route object as the gateways serve it: its HTTP
// routes by hosts, and the Gateways ("namespace/name") they are bound to.
type servedRoute struct {
	ref      routeRef
	routes   []hostRoutes
	gateways []string
}

// routeIndex is every route object some gateway serves. A VirtualService
// is one object; a VirtualService the Gateway API conversion generated
// (model.GatewayAPIRoutesAnnotation) holds the rules of several HTTPRoutes
// and GRPCRoutes, each route named after its origin, and is split back
// into them.
type routeIndex struct {
	byRef     map[routeRef]*servedRoute
	byGateway map[string][]*servedRoute
	// virtualServices is every VirtualService, served or not.
	virtualServices map[routeRef]bool
}

func newRouteIndex(push *model.PushContext) *routeIndex {
	idx := &routeIndex{byRef: map[routeRef]*servedRoute{}, byGateway: map[string][]*servedRoute{}, virtualServices: map[routeRef]bool{}}
	for _, vs := range push.VirtualServices() {
		idx.virtualServices[routeRef{kindVirtualService, vs.Namespace, vs.Name}] = true
	}
	added := map[routeRef]map[config.Key]bool{}
	add := func(ref routeRef, gw string, vs config.Config, hr hostRoutes) {
		s := idx.byRef[ref]
		if s == nil {
			s = &servedRoute{ref: ref}
			idx.byRef[ref] = s
			added[ref] = map[config.Key]bool{}
		}
		if !slices.Contains(s.gateways, gw) {
			s.gateways = append(s.gateways, gw)
			idx.byGateway[gw] = append(idx.byGateway[gw], s)
		}
		if !added[ref][vs.Key()] {
			added[ref][vs.Key()] = true
			s.routes = append(s.routes, hr)
		}
	}
	for _, gw := range push.Gateways() {
		gwKey := gw.Namespace + "/" + gw.Name
		for _, vs := range push.VirtualServicesBoundTo(gwKey) {
			spec, ok := vs.Spec.(*networking.VirtualService)
			if !ok {
				continue
			}
			if vs.Annotations[model.GatewayAPIRoutesAnnotation] == "" {
				add(routeRef{kindVirtualService, vs.Namespace, vs.Name}, gwKey, vs, hostRoutes{hosts: spec.GetHosts(), http: spec.GetHttp()})
				continue
			}
			byOrigin := map[routeRef][]*networking.HTTPRoute{}
			for _, r := range spec.GetHttp() {
				if ref, ok := gatewayAPIOrigin(r.GetName()); ok {
					byOrigin[ref] = append(byOrigin[ref], r)
				}
			}
			for _, ref := range slices.SortedFunc(maps.Keys(byOrigin), compareRouteRefs) {
				add(ref, gwKey, vs, hostRoutes{hosts: spec.GetHosts(), http: byOrigin[ref]})
			}
		}
	}
	return idx
}

func compareRouteRefs(a, b routeRef) int {
	return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}

// gatewayAPIOrigin reads the route object from the name the Gateway API
// conversion gives each route: "NS/NAME/rules/I/..." for an HTTPRoute,
// "NS/NAME/grpc/rules/I/..." for a GRPCRoute.
func gatewayAPIOrigin(name string) (routeRef, bool) {
	parts := strings.Split(name, "/")
	if len(parts) < 4 || parts[0] == "" || parts[1] == "" {
		return routeRef{}, false
	}
	switch {
	case parts[2] == "rules":
		return routeRef{kindHTTPRoute, parts[0], parts[1]}, true
	case parts[2] == "grpc" && parts[3] == "rules":
		return routeRef{kindGRPCRoute, parts[0], parts[1]}, true
	}
	return routeRef{}, false
}

// served returns the route object ref as the gateways serve it, nil when
// none does.
func (idx *routeIndex) served(ref routeRef) *servedRoute {
	if idx == nil {
		return nil
	}
	return idx.byRef[ref]
}

// whyNotServed says why no gateway serves ref.
func (idx *routeIndex) whyNotServed(ref routeRef) string {
	if ref.kind != kindVirtualService {
		return fmt.Sprintf("no gateway serves %s: it does not exist, or no Gateway accepts it", ref)
	}
	if idx != nil && idx.virtualServices[ref] {
		return fmt.Sprintf("%s is bound to no Gateway that exists (its spec.gateways), so no gateway serves its routes", ref)
	}
	return fmt.Sprintf("%s does not exist", ref)
}
