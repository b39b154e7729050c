package gatewayapi

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// grpcRoute attaches one GRPCRoute and adds its rules, as HTTP/2 routes on
// the request path "/SERVICE/METHOD", to the hostnames of every listener
// it is attached to.
func (c *converter) grpcRoute(order int, r *gw.GRPCRoute) {
	src := Source(schema.GRPCRouteKind.Name, r)
	atts := c.attach(schema.GRPCRouteKind.Name, src, r.Namespace, r.Spec.ParentRefs, r.Spec.Hostnames)
	if len(atts) == 0 {
		c.statusOnly(src, func() {
			for i, rule := range r.Spec.Rules {
				c.grpcRuleAction(r, rule, fmt.Sprintf("spec.rules[%d]", i))
			}
		})
		return
	}
	var routes []*sortedRoute
	for i, rule := range r.Spec.Rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		base, ok := c.grpcRuleAction(r, rule, field)
		if !ok {
			continue
		}
		var session *model.GatewayAPISession
		if base.DirectResponse == nil {
			// As for an HTTPRoute rule (session.go).
			session = c.sessionPersistence(src, fmt.Sprintf("%s/%s/grpc/rules/%d", r.Namespace, r.Name, i), rule.SessionPersistence,
				len(base.Route), field+".sessionPersistence")
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gw.GRPCRouteMatch{{}}
		}
		for j, m := range matches {
			im, key, err := convertGRPCMatch(m)
			if err != nil {
				c.errorf(src, fmt.Sprintf("%s.matches[%d]", field, j), "%v; match skipped", err)
				continue
			}
			key.order, key.rule, key.match = order, i, j
			hr := cloneRoute(base)
			hr.Name = fmt.Sprintf("%s/%s/grpc/rules/%d/matches/%d", r.Namespace, r.Name, i, j)
			if !isEmptyMatch(im) {
				hr.Match = []*networking.HTTPMatchRequest{im}
			}
			if err := checkHTTPRoute(r.Namespace, hr); err != nil {
				c.errorf(src, fmt.Sprintf("%s.matches[%d]", field, j), "%v; match skipped", err)
				continue
			}
			routes = append(routes, &sortedRoute{key: key, route: hr, session: session})
		}
	}
	for _, a := range atts {
		for _, h := range a.hosts {
			c.addRoutes(a.listener, h, routes)
		}
	}
}

// grpcRuleAction converts a GRPCRoute rule's filters and backends.
func (c *converter) grpcRuleAction(r *gw.GRPCRoute, rule gw.GRPCRouteRule, field string) (*networking.HTTPRoute, bool) {
	src := Source(schema.GRPCRouteKind.Name, r)
	out := &networking.HTTPRoute{}
	for k, f := range rule.Filters {
		ff := fmt.Sprintf("%s.filters[%d]", field, k)
		switch f.Type {
		case gw.GRPCRouteFilterRequestHeaderModifier:
			out.Headers = withHeaders(out.Headers)
			out.Headers.Request = headerOps(f.RequestHeaderModifier)
		case gw.GRPCRouteFilterResponseHeaderModifier:
			out.Headers = withHeaders(out.Headers)
			out.Headers.Response = headerOps(f.ResponseHeaderModifier)
		case gw.GRPCRouteFilterRequestMirror:
			if m := c.mirror(src, r.Namespace, f.RequestMirror, ff+".requestMirror"); m != nil {
				out.Mirrors = append(out.Mirrors, m)
			}
		default:
			c.errorf(src, ff+".type", "filter %q is not supported; rule skipped", f.Type)
			return nil, false
		}
	}
	refs := make([]backendIn, len(rule.BackendRefs))
	for k, b := range rule.BackendRefs {
		refs[k] = backendIn{ref: b.BackendObjectReference, weight: b.Weight, filters: len(b.Filters)}
	}
	c.routeTo(out, src, r.Namespace, refs, field)
	return out, true
}

// convertGRPCMatch turns a gRPC method match into a path match:
// service and method exact give the path "/SERVICE/METHOD" exactly; a
// service alone the prefix "/SERVICE/"; a method alone, or
// RegularExpression, a regex with "[^/]+" for the part not given. For
// precedence an exact path ranks as Exact, a service prefix as PathPrefix
// and a regex as RegularExpression, each longer (service plus method)
// first, as the specification ranks more characters of service and then
// method first.
func convertGRPCMatch(m gw.GRPCRouteMatch) (*networking.HTTPMatchRequest, precedence, error) {
	out := &networking.HTTPMatchRequest{}
	var key precedence
	key.kind = pathPrefix
	if mm := m.Method; mm != nil {
		svc, method := deref(mm.Service, ""), deref(mm.Method, "")
		key.length = len(svc) + len(method)
		switch deref(mm.Type, gw.GRPCMethodMatchExact) {
		case gw.GRPCMethodMatchExact:
			switch {
			case svc != "" && method != "":
				key.kind = pathExact
				out.Uri = &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "/" + svc + "/" + method}}
			case svc != "":
				out.Uri = &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/" + svc + "/"}}
			case method != "":
				key.kind = pathRegex
				out.Uri = &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "/[^/]+/" + regexp.QuoteMeta(method)}}
			}
		case gw.GRPCMethodMatchRegularExpression:
			key.kind = pathRegex
			out.Uri = &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "/" + cmp.Or(svc, "[^/]+") + "/" + cmp.Or(method, "[^/]+")}}
		default:
			return nil, key, fmt.Errorf("method match type %q is not one of Exact, RegularExpression", *mm.Type)
		}
	}
	for _, h := range m.Headers {
		sm, err := stringMatch(string(deref(h.Type, gw.GRPCHeaderMatchExact)), h.Value)
		if err != nil {
			return nil, key, fmt.Errorf("header %s: %v", h.Name, err)
		}
		if out.Headers == nil {
			out.Headers = map[string]*networking.StringMatch{}
		}
		name := strings.ToLower(string(h.Name))
		if _, dup := out.Headers[name]; !dup {
			out.Headers[name] = sm
		}
	}
	key.headers = len(out.Headers)
	return out, key, nil
}
