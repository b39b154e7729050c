package grpcgen

import (
	"fmt"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// buildRouteConfig makes the route configuration of svc's port: one virtual
// host for the service, whose routes come from the VirtualService that
// routes the host for the mesh, or a single route to the service's default
// cluster when none does (or none of its routes is for this port). As in
// Istio's sidecars, a VirtualService's routes replace the default: a
// request none of them matches fails.
func buildRouteConfig(push *model.PushContext, idx *meshVirtualServices, svc *model.Service, port model.Port, r *reporter) *routev3.RouteConfiguration {
	name := ListenerName(svc.Hostname, port.Number)
	var routes []*routev3.Route
	vs := idx.forHost(svc.Hostname)
	if vs != nil {
		routes = buildVirtualServiceRoutes(push, vs, port.Number, r)
	}
	if len(routes) == 0 {
		// No VirtualService, one with only TCP/TLS routes, or none of its
		// HTTP routes for this port (or all unusable, as reported).
		routes = []*routev3.Route{defaultRoute(push, svc, port, r)}
	}
	if w := warmRoute(push, svc, port, routes); w != nil {
		routes = append(routes, w)
	}
	rc := &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name: name,
			// gRPC picks the virtual host by the channel's authority, which
			// is the dial target "HOST:PORT" unless overridden.
			Domains: []string{svc.Hostname, name},
			Routes:  routes,
		}},
	}
	if err := rc.ValidateAll(); err != nil {
		r.add(&config.Error{Key: svc.Source, Message: "route configuration " + name + " is invalid and was not built: " + err.Error()})
		return nil
	}
	return rc
}

// defaultRoute sends everything to the port's default cluster, hashing as
// the service's DestinationRule says.
func defaultRoute(push *model.PushContext, svc *model.Service, port model.Port, r *reporter) *routev3.Route {
	d := route.Destination{Cluster: model.ClusterName(port.Number, "", svc.Hostname), Host: svc.Hostname, Port: port.Number}
	hps, dropped := hashPolicies(push, []route.Destination{d})
	for _, c := range dropped {
		if pol := policy.For(push, svc.Hostname, port.Number, ""); pol.Rule != nil {
			r.add(warnPolicy(&pol, pol.LoadBalancerField+".consistentHash", "cluster %s: %s", c, hashKeyUnsupported))
		}
	}
	return &routev3.Route{
		Name:  "default",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: d.Cluster},
			HashPolicy:       hps,
		}},
	}
}

// warmRouteName names the route that keeps clusters warm.
const warmRouteName = "wayfinder-warm-clusters"

// warmRoute is a route that never matches (runtime_fraction 0%) naming
// every cluster of the service port (default and DestinationRule subsets)
// the other routes do not. gRPC keeps a child balancer, with its CDS/EDS
// watches and connections, for every cluster its route configuration
// names. gRPC-Go (v1.85) installs a new route configuration's cluster
// choice before its balancer has a child for a cluster it had not seen, so
// RPCs sent to a newly named cluster in that window fail with "unknown
// cluster selected for RPC". With every cluster of the service already
// named, shifting traffic between subsets never names a new one. Returns
// nil when every cluster is already routed to.
func warmRoute(push *model.PushContext, svc *model.Service, port model.Port, routes []*routev3.Route) *routev3.Route {
	used := map[string]bool{}
	for _, r := range routes {
		used[r.GetRoute().GetCluster()] = true
		for _, c := range r.GetRoute().GetWeightedClusters().GetClusters() {
			used[c.GetName()] = true
		}
	}
	names := []string{model.ClusterName(port.Number, "", svc.Hostname)}
	for _, s := range policy.Subsets(push, svc.Hostname) {
		names = append(names, model.ClusterName(port.Number, s.GetName(), svc.Hostname))
	}
	wc := &routev3.WeightedCluster{}
	for _, n := range names {
		if !used[n] {
			used[n] = true
			wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{Name: n, Weight: wrapUInt32(1)})
		}
	}
	if len(wc.Clusters) == 0 {
		return nil
	}
	return &routev3.Route{
		Name: warmRouteName,
		Match: &routev3.RouteMatch{
			PathSpecifier:   &routev3.RouteMatch_Prefix{Prefix: "/"},
			RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 0}},
		},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}}},
	}
}

// buildVirtualServiceRoutes translates vs's HTTP routes for one service
// port, in order. Each match becomes its own route with the same action;
// matches for another port or only for gateways are left out, and routes
// after one that matches everything are dropped with a warning.
func buildVirtualServiceRoutes(push *model.PushContext, vs *config.Config, port uint32, r *reporter) []*routev3.Route {
	spec := vs.Spec.(*networking.VirtualService)
	var out []*routev3.Route
	catchAll := ""
	for i, http := range spec.GetHttp() {
		field := fmt.Sprintf("spec.http[%d]", i)
		matches := http.GetMatch()
		if len(matches) == 0 {
			matches = []*networking.HTTPMatchRequest{nil}
		}
		if !slices.ContainsFunc(matches, func(m *networking.HTTPMatchRequest) bool { return matchAppliesToMesh(m, port) }) {
			continue
		}
		if catchAll != "" {
			r.warnf(vs, field, "never matches on port %d: %s before it matches every request; dropped", port, catchAll)
			continue
		}
		tmpl := buildAction(push, vs, http, field, r)
		for k, m := range matches {
			if !matchAppliesToMesh(m, port) {
				continue
			}
			mfield := field
			if m != nil {
				mfield = fmt.Sprintf("%s.match[%d]", field, k)
			}
			if catchAll != "" {
				r.warnf(vs, mfield, "never matches on port %d: %s before it matches every request; dropped", port, catchAll)
				continue
			}
			if len(m.GetQueryParams()) > 0 {
				// gRPC ignores a route with query parameter matchers; an RPC
				// has no query string anyway.
				r.warnf(vs, mfield+".queryParams", "gRPC requests have no query parameters; this match is dropped")
				continue
			}
			if len(m.GetSourceLabels()) > 0 || m.GetSourceNamespace() != "" {
				// The resources are shared by every client, so a match
				// meant for some clients only cannot be honoured; applying
				// it to all would take other clients' traffic.
				r.warnf(vs, mfield, "gRPC clients share their routes, so a match on the caller's labels or namespace cannot apply to some of them only; this match is dropped")
				continue
			}
			rm, errs, ok := route.TranslateMatch(vs, m, mfield)
			r.add(errs...)
			if !ok {
				continue
			}
			if route.IsCatchAll(rm) {
				catchAll = mfield
			}
			if tmpl == nil {
				continue
			}
			rt := proto.Clone(tmpl).(*routev3.Route)
			rt.Match = rm
			if m.GetName() != "" {
				rt.Name = http.GetName() + "." + m.GetName()
			}
			if err := rt.ValidateAll(); err != nil {
				r.errorf(vs, mfield, "generated route is invalid, route skipped: %v", err)
				continue
			}
			out = append(out, rt)
		}
	}
	return out
}

// matchAppliesToMesh reports whether match m is in force for mesh clients
// calling port: its port (if any) is port, and its gateways (if any)
// include "mesh". A nil match always applies.
func matchAppliesToMesh(m *networking.HTTPMatchRequest, port uint32) bool {
	if m == nil {
		return true
	}
	if m.GetPort() != 0 && m.GetPort() != port {
		return false
	}
	return len(m.GetGateways()) == 0 || slices.Contains(m.GetGateways(), "mesh")
}

// buildAction builds everything of a route but its match, or returns nil
// (with the reason reported) when the route cannot be used. Parts of an
// HTTP route gRPC clients do not implement are reported as warnings.
func buildAction(push *model.PushContext, vs *config.Config, in *networking.HTTPRoute, field string, r *reporter) *routev3.Route {
	switch {
	case in.GetDelegate() != nil:
		r.errorf(vs, field+".delegate", "delegate VirtualServices are not supported; route skipped")
		return nil
	case in.GetRedirect() != nil:
		r.errorf(vs, field+".redirect", "gRPC clients cannot follow redirects; route skipped")
		return nil
	case in.GetDirectResponse() != nil:
		r.errorf(vs, field+".directResponse", "gRPC clients cannot answer requests themselves; route skipped")
		return nil
	case len(in.GetRoute()) == 0:
		r.errorf(vs, field+".route", "at least one destination is required; route skipped")
		return nil
	}
	warnUnsupported(vs, in, field, r)

	out := &routev3.Route{Name: in.GetName()}
	action := &routev3.RouteAction{}
	ok := true
	var dsts []route.Destination
	if len(in.GetRoute()) == 1 {
		d, errs, dok := route.ResolveDestination(push, vs, in.GetRoute()[0].GetDestination(), field+".route[0].destination")
		r.add(errs...)
		ok = ok && dok
		dsts = append(dsts, d)
		action.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: d.Cluster}
	} else {
		wc := &routev3.WeightedCluster{}
		for j, hd := range in.GetRoute() {
			f := fmt.Sprintf("%s.route[%d]", field, j)
			if hd.GetWeight() < 0 {
				r.errorf(vs, f+".weight", "must not be negative")
				ok = false
				continue
			}
			if hd.GetWeight() == 0 {
				// No traffic; gRPC would skip it too.
				continue
			}
			d, errs, dok := route.ResolveDestination(push, vs, hd.GetDestination(), f+".destination")
			r.add(errs...)
			ok = ok && dok
			dsts = append(dsts, d)
			wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{Name: d.Cluster, Weight: wrapUInt32(uint32(hd.GetWeight()))})
		}
		if len(wc.Clusters) == 0 {
			r.errorf(vs, field+".route", "every destination has weight 0; at least one needs a positive weight")
			ok = false
		}
		action.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	}
	var dropped []string
	action.HashPolicy, dropped = hashPolicies(push, dsts)
	for _, c := range dropped {
		r.warnf(vs, field, "destination %s: %s", c, hashKeyUnsupported)
	}

	if t := in.GetTimeout(); t != nil {
		if t.AsDuration() < 0 {
			r.errorf(vs, field+".timeout", "must not be negative")
			ok = false
		}
		// gRPC reads the RPC deadline cap here; 0 means none, as in Istio.
		action.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationOf(t.AsDuration())}
	}
	rp, rok := retryPolicy(vs, in.GetRetries(), field+".retries", r)
	ok = ok && rok
	action.RetryPolicy = rp
	out.Action = &routev3.Route_Route{Route: action}

	if in.GetFault() != nil {
		f, errs, fok := route.TranslateFault(vs, in.GetFault(), field+".fault")
		r.add(errs...)
		ok = ok && fok
		if f != nil {
			a, err := protoconv.Any(f)
			if err != nil {
				r.errorf(vs, field+".fault", "invalid: %v", err)
				ok = false
			} else {
				out.TypedPerFilterConfig = map[string]*anypb.Any{wellknown.Fault: a}
			}
		}
	}
	if !ok {
		return nil
	}
	return out
}

// warnUnsupported reports the parts of an HTTP route gRPC-Go ignores.
func warnUnsupported(vs *config.Config, in *networking.HTTPRoute, field string, r *reporter) {
	ignored := func(f, what string) { r.warnf(vs, field+"."+f, "%s is not supported by gRPC clients; ignored", what) }
	if in.GetRewrite() != nil {
		ignored("rewrite", "rewriting")
	}
	if in.GetHeaders() != nil {
		ignored("headers", "header manipulation")
	}
	for j, d := range in.GetRoute() {
		if d.GetHeaders() != nil {
			ignored(fmt.Sprintf("route[%d].headers", j), "header manipulation")
		}
	}
	if in.GetMirror() != nil || len(in.GetMirrors()) > 0 {
		ignored("mirror", "mirroring")
	}
	if in.GetCorsPolicy() != nil {
		ignored("corsPolicy", "CORS")
	}
}

// hashKeyUnsupported explains a dropped hash policy.
const hashKeyUnsupported = "gRPC clients hash only on a header (consistentHash.httpHeaderName); the rule's hash key is ignored and the ring hash picks at random"

// hashPolicies is what the destinations' consistent-hash load balancers
// hash on. gRPC hashes only on a header (or its channel), so other keys
// are left out and the clusters whose key was dropped are returned.
func hashPolicies(push *model.PushContext, dsts []route.Destination) (out []*routev3.RouteAction_HashPolicy, dropped []string) {
	for _, d := range dsts {
		if d.Host == "" {
			continue
		}
		for _, hp := range hashPolicyFor(push, d) {
			if hp.GetHeader() == nil {
				dropped = append(dropped, d.Cluster)
				continue
			}
			if !slices.ContainsFunc(out, func(o *routev3.RouteAction_HashPolicy) bool { return proto.Equal(o, hp) }) {
				out = append(out, hp)
			}
		}
	}
	return out, dropped
}
