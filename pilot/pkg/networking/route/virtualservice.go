package route

import (
	"fmt"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// builtRoute is one Envoy route and the part of a VirtualService it came
// from, for ordering and for warnings that point at the user's config.
type builtRoute struct {
	route *routev3.Route
	vs    *config.Config
	field string // "spec.http[1]" or "spec.http[1].match[0]"
}

// buildVirtualServiceRoutes translates vs's HTTP routes for one gateway
// port, in the order written. Each match of an HTTP route becomes its own
// Envoy route with the same action; matches restricted to another port or
// gateway are left out. Routes after one that matches every request can
// never be reached: they are dropped, with a warning, as Istio drops them.
func buildVirtualServiceRoutes(ctx routeContext, gatewayKey string, r *reporter) []builtRoute {
	spec, ok := ctx.vs.Spec.(*networking.VirtualService)
	if !ok {
		return nil
	}
	sessions, err := model.GatewayAPISessions(ctx.vs.Annotations)
	if err != nil {
		r.errorf(ctx.vs, "metadata.annotations", "%v; sessions not served", err)
	}
	ctx.sessions = sessions
	var out []builtRoute
	for i, http := range spec.GetHttp() {
		field := fmt.Sprintf("spec.http[%d]", i)
		p := &problems{r: r, c: ctx.vs}
		tmpl := translateAction(ctx, http, field, p)
		if tmpl != nil {
			// Per-route statistics named after the rule (stats.go).
			tmpl.StatPrefix = routeStatPrefix(ctx.vs, i, http.GetName())
		}

		matches := http.GetMatch()
		if len(matches) == 0 {
			matches = []*networking.HTTPMatchRequest{nil}
		}
		catchAll := ""
		for k, m := range matches {
			mfield := field
			if m != nil {
				mfield = fmt.Sprintf("%s.match[%d]", field, k)
			}
			// A match for another port or gateway is simply not here; only
			// one that would apply can be shadowed.
			if !matchApplies(m, ctx.port, gatewayKey, ctx.vs.Namespace) {
				continue
			}
			if catchAll != "" {
				r.warnf(ctx.vs, mfield, "never matches on port %d: %s before it matches every request; dropped", ctx.port, catchAll)
				continue
			}
			mp := &problems{r: r, c: ctx.vs}
			rm := translateMatch(m, mfield, mp)
			if mp.fatal {
				continue
			}
			if isCatchAll(rm) {
				catchAll = mfield
			}
			if tmpl == nil {
				continue
			}
			rt := shallowRoute(tmpl)
			rt.Match = sharedMatches.get(rm)
			if m.GetName() != "" {
				rt.Name = http.GetName() + "." + m.GetName()
			}
			if err := rt.ValidateAll(); err != nil {
				r.errorf(ctx.vs, mfield, "generated Envoy route is invalid, route skipped: %v", err)
				continue
			}
			out = append(out, builtRoute{route: rt, vs: ctx.vs, field: mfield})
		}
		if catchAll != "" {
			for j := i + 1; j < len(spec.GetHttp()); j++ {
				if !routeApplies(spec.GetHttp()[j], ctx.port, gatewayKey, ctx.vs.Namespace) {
					continue
				}
				r.warnf(ctx.vs, fmt.Sprintf("spec.http[%d]", j), "never matches on port %d: %s before it matches every request; dropped", ctx.port, catchAll)
			}
			break
		}
	}
	return out
}

// routeApplies reports whether any match of an HTTP route is in force on
// this gateway port; a route without matches always is.
func routeApplies(http *networking.HTTPRoute, port uint32, gatewayKey, vsNamespace string) bool {
	if len(http.GetMatch()) == 0 {
		return true
	}
	return slices.ContainsFunc(http.GetMatch(), func(m *networking.HTTPMatchRequest) bool {
		return matchApplies(m, port, gatewayKey, vsNamespace)
	})
}

// matchApplies reports whether match m is in force on this gateway port:
// its port (if any) is the port and its gateways (if any) include the
// gateway. A nil match always applies.
func matchApplies(m *networking.HTTPMatchRequest, port uint32, gatewayKey, vsNamespace string) bool {
	if m == nil {
		return true
	}
	if m.GetPort() != 0 && m.GetPort() != port {
		return false
	}
	if len(m.GetGateways()) == 0 {
		return true
	}
	return slices.ContainsFunc(m.GetGateways(), func(g string) bool {
		return g != "mesh" && model.ResolveGatewayName(g, vsNamespace) == gatewayKey
	})
}

// shallowRoute returns a new route with tmpl's fields, sharing their
// values: each match of an HTTP route gets its own route (its own match
// and name) around one translated action, which nobody edits afterwards.
func shallowRoute(tmpl *routev3.Route) *routev3.Route {
	out := &routev3.Route{}
	dst := out.ProtoReflect()
	tmpl.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	return out
}
