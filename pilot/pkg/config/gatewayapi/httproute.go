package gatewayapi

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// httpRoute attaches one HTTPRoute and adds its rules to the hostnames of
// every listener it is attached to.
func (c *converter) httpRoute(order int, r *gw.HTTPRoute) {
	src := Source(schema.HTTPRouteKind.Name, r)
	atts := c.attach(schema.HTTPRouteKind.Name, src, r.Namespace, r.Spec.ParentRefs, r.Spec.Hostnames)
	if len(atts) == 0 {
		c.statusOnly(src, func() {
			for i, rule := range r.Spec.Rules {
				c.ruleAction(r, rule, fmt.Sprintf("spec.rules[%d]", i))
			}
		})
		return
	}
	var routes []*sortedRoute
	for i, rule := range r.Spec.Rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		base, ok := c.ruleAction(r, rule, field)
		if !ok {
			continue
		}
		var session *model.GatewayAPISession
		if base.Redirect == nil && base.DirectResponse == nil {
			session = c.sessionPersistence(src, fmt.Sprintf("%s/%s/rules/%d", r.Namespace, r.Name, i), rule.SessionPersistence,
				len(base.Route), field+".sessionPersistence")
		} else if rule.SessionPersistence != nil {
			c.warnf(src, field+".sessionPersistence", "ignored: the rule forwards to no backend")
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gw.HTTPRouteMatch{{}}
		}
		for j, m := range matches {
			mf := fmt.Sprintf("%s.matches[%d]", field, j)
			mi, err := convertMatch(m)
			if err != nil {
				c.errorf(src, mf, "%v; match skipped", err)
				continue
			}
			mi.key.order, mi.key.rule, mi.key.match = order, i, j
			name := fmt.Sprintf("%s/%s/rules/%d/matches/%d", r.Namespace, r.Name, i, j)
			repl, replaces := prefixReplacement(base)
			if !replaces {
				hr := cloneRoute(base)
				hr.Name, hr.Match = name, mi.istioMatches(mi.pieces)
				if err := checkHTTPRoute(r.Namespace, hr); err != nil {
					c.errorf(src, mf, "%v; match skipped", err)
					continue
				}
				routes = append(routes, &sortedRoute{key: mi.key, route: hr, session: session})
				continue
			}
			// A prefix replacement rewrites "/foo" and "/foo/..." differently.
			for _, piece := range mi.pieces {
				hr := cloneRoute(base)
				hr.Name, hr.Match = name+piece.nameSuffix(), mi.istioMatches([]pathPiece{piece})
				if hr.Match == nil {
					// Envoy rewrites the matched prefix: "/" must be matched.
					hr.Match = []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/"}}}}
				}
				setPrefixReplacement(hr, piece.replacement(repl))
				if err := checkHTTPRoute(r.Namespace, hr); err != nil {
					c.errorf(src, mf, "%v; match skipped", err)
					break
				}
				routes = append(routes, &sortedRoute{key: mi.key, route: hr, session: session})
			}
		}
	}
	for _, a := range atts {
		for _, h := range a.hosts {
			c.addRoutes(a.listener, h, routes)
		}
	}
}

// ruleAction converts what a rule does (filters, backends, timeouts) into
// an Istio route without matches, or reports why the rule is skipped.
func (c *converter) ruleAction(r *gw.HTTPRoute, rule gw.HTTPRouteRule, field string) (*networking.HTTPRoute, bool) {
	src := Source(schema.HTTPRouteKind.Name, r)
	out := &networking.HTTPRoute{}
	for k, f := range rule.Filters {
		ff := fmt.Sprintf("%s.filters[%d]", field, k)
		switch f.Type {
		case gw.HTTPRouteFilterRequestHeaderModifier:
			out.Headers = withHeaders(out.Headers)
			out.Headers.Request = headerOps(f.RequestHeaderModifier)
		case gw.HTTPRouteFilterResponseHeaderModifier:
			out.Headers = withHeaders(out.Headers)
			out.Headers.Response = headerOps(f.ResponseHeaderModifier)
		case gw.HTTPRouteFilterRequestRedirect:
			rd, err := redirect(f.RequestRedirect, rule.Matches)
			if err != nil {
				c.errorf(src, ff+".requestRedirect", "%v; rule skipped", err)
				return nil, false
			}
			out.Redirect = rd
		case gw.HTTPRouteFilterURLRewrite:
			rw, err := rewrite(f.URLRewrite, rule.Matches)
			if err != nil {
				c.errorf(src, ff+".urlRewrite", "%v; rule skipped", err)
				return nil, false
			}
			out.Rewrite = rw
		case gw.HTTPRouteFilterRequestMirror:
			if m := c.mirror(src, r.Namespace, f.RequestMirror, ff+".requestMirror"); m != nil {
				out.Mirrors = append(out.Mirrors, m)
			}
		case gw.HTTPRouteFilterCORS:
			out.CorsPolicy = c.cors(src, f.CORS, ff+".cors")
		default:
			c.errorf(src, ff+".type", "filter %q is not supported; rule skipped", f.Type)
			return nil, false
		}
	}
	if out.Redirect != nil {
		if len(rule.BackendRefs) > 0 {
			c.warnf(src, field+".backendRefs", "ignored: the rule redirects")
		}
	} else {
		refs := make([]backendIn, len(rule.BackendRefs))
		for k, b := range rule.BackendRefs {
			refs[k] = backendIn{ref: b.BackendObjectReference, weight: b.Weight, filters: len(b.Filters)}
		}
		c.routeTo(out, src, r.Namespace, refs, field)
	}
	out.Retries = c.retries(src, rule.Retry, field+".retry")
	c.timeouts(src, rule.Timeouts, out, field+".timeouts")
	return out, true
}

// backend resolves a reference to a Service (or, see hostnameBackend, to
// a ServiceEntry host) into a destination. Another namespace needs a
// ReferenceGrant; the Service must exist and have the port.
func (c *converter) backend(src, ns string, ref gw.BackendObjectReference, field string) (*networking.Destination, bool) {
	group, kind := string(deref(ref.Group, "")), string(deref(ref.Kind, "Service"))
	if group == IstioGroup && kind == HostnameKind {
		return c.hostnameBackend(src, ns, ref, field)
	}
	if group != "" || kind != "Service" {
		c.errorf(src, field, "backend kind %s.%s is not supported, only Service and Hostname.%s (InvalidKind); backend skipped", kind, group, IstioGroup)
		c.st.refUnresolved(src, gw.RouteReasonInvalidKind, "%s: backend kind %s.%s is not supported, only Service and Hostname.%s", field, kind, group, IstioGroup)
		return nil, false
	}
	bns := string(deref(ref.Namespace, gw.Namespace(ns)))
	// The grant must name the referring route's own kind (Source begins
	// with it).
	fromKind, _, _ := strings.Cut(src, " ")
	if bns != ns && !c.grants.allowed(fromKind, ns, "", "Service", bns, string(ref.Name)) {
		c.errorf(src, field, "Service %s/%s is in another namespace and no ReferenceGrant there allows it (RefNotPermitted); backend skipped", bns, ref.Name)
		c.st.refUnresolved(src, gw.RouteReasonRefNotPermitted, "%s: Service %s/%s is in another namespace and no ReferenceGrant allows it", field, bns, ref.Name)
		return nil, false
	}
	if ref.Port == nil {
		c.errorf(src, field+".port", "a port is required for a Service backend; backend skipped")
		c.st.refUnresolved(src, gw.RouteReasonUnsupportedValue, "%s.port: a port is required for a Service backend", field)
		return nil, false
	}
	var svcFound bool
	if c.in.Services != nil {
		if svc := c.in.Services(bns, string(ref.Name)); svc != nil {
			svcFound = true
			hasPort := false
			for _, p := range svc.Spec.Ports {
				hasPort = hasPort || p.Port == *ref.Port
			}
			if !hasPort {
				c.errorf(src, field+".port", "Service %s/%s has no port %d (BackendNotFound); backend skipped", bns, ref.Name, *ref.Port)
				c.st.refUnresolved(src, gw.RouteReasonBackendNotFound, "%s.port: Service %s/%s has no port %d", field, bns, ref.Name, *ref.Port)
				return nil, false
			}
		}
	}
	if !svcFound {
		c.errorf(src, field, "Service %s/%s does not exist (BackendNotFound); backend skipped", bns, ref.Name)
		c.st.refUnresolved(src, gw.RouteReasonBackendNotFound, "%s: Service %s/%s does not exist", field, bns, ref.Name)
		return nil, false
	}
	return &networking.Destination{
		Host: string(ref.Name) + "." + bns + ".svc." + c.opts.DomainSuffix,
		Port: &networking.PortSelector{Number: uint32(*ref.Port)},
	}, true
}

func withHeaders(h *networking.Headers) *networking.Headers {
	if h == nil {
		return &networking.Headers{}
	}
	return h
}

func headerOps(f *gw.HTTPHeaderFilter) *networking.Headers_HeaderOperations {
	if f == nil {
		return nil
	}
	out := &networking.Headers_HeaderOperations{}
	for _, h := range f.Set {
		if out.Set == nil {
			out.Set = map[string]string{}
		}
		out.Set[strings.ToLower(string(h.Name))] = h.Value
	}
	for _, h := range f.Add {
		if out.Add == nil {
			out.Add = map[string]string{}
		}
		out.Add[strings.ToLower(string(h.Name))] = h.Value
	}
	for _, n := range f.Remove {
		out.Remove = append(out.Remove, strings.ToLower(n))
	}
	return out
}

// prefixOf returns the PathPrefix value of a rule's single match, which
// ReplacePrefixMatch replaces.
func prefixOf(matches []gw.HTTPRouteMatch) (string, bool) {
	if len(matches) != 1 || matches[0].Path == nil || deref(matches[0].Path.Type, gw.PathMatchPathPrefix) != gw.PathMatchPathPrefix {
		return "", false
	}
	return deref(matches[0].Path.Value, "/"), true
}

func redirect(f *gw.HTTPRequestRedirectFilter, matches []gw.HTTPRouteMatch) (*networking.HTTPRedirect, error) {
	out := &networking.HTTPRedirect{RedirectCode: 302}
	if f == nil {
		return out, nil
	}
	if f.StatusCode != nil {
		out.RedirectCode = uint32(*f.StatusCode)
	}
	if f.Scheme != nil {
		out.Scheme = *f.Scheme
	}
	if f.Hostname != nil {
		out.Authority = string(*f.Hostname)
	}
	if f.Port != nil {
		out.RedirectPort = &networking.HTTPRedirect_Port{Port: uint32(*f.Port)}
	}
	if p := f.Path; p != nil {
		switch p.Type {
		case gw.FullPathHTTPPathModifier:
			out.Uri = deref(p.ReplaceFullPath, "/")
		case gw.PrefixMatchHTTPPathModifier:
			if _, ok := prefixOf(matches); !ok {
				return nil, fmt.Errorf("ReplacePrefixMatch needs the rule to have exactly one PathPrefix match")
			}
			out.PrefixRewrite = cmp.Or(deref(p.ReplacePrefixMatch, "/"), "/")
		default:
			return nil, fmt.Errorf("path type %q is not one of ReplaceFullPath, ReplacePrefixMatch", p.Type)
		}
	}
	return out, nil
}

func rewrite(f *gw.HTTPURLRewriteFilter, matches []gw.HTTPRouteMatch) (*networking.HTTPRewrite, error) {
	out := &networking.HTTPRewrite{}
	if f == nil {
		return out, nil
	}
	if f.Hostname != nil {
		out.Authority = string(*f.Hostname)
	}
	if p := f.Path; p != nil {
		switch p.Type {
		case gw.FullPathHTTPPathModifier:
			out.UriRegexRewrite = &networking.RegexRewrite{Match: "^/.*", Rewrite: deref(p.ReplaceFullPath, "/")}
		case gw.PrefixMatchHTTPPathModifier:
			if _, ok := prefixOf(matches); !ok {
				return nil, fmt.Errorf("ReplacePrefixMatch needs the rule to have exactly one PathPrefix match")
			}
			out.Uri = cmp.Or(deref(p.ReplacePrefixMatch, "/"), "/")
		default:
			return nil, fmt.Errorf("path type %q is not one of ReplaceFullPath, ReplacePrefixMatch", p.Type)
		}
	}
	return out, nil
}

// parseDuration reads a Gateway API duration ("10s", "1h30m", "500ms"):
// Go's syntax restricted to h, m, s and ms, which the CRD enforces.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %s: %v", strconv.Quote(s), err)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %s is negative", strconv.Quote(s))
	}
	return d, nil
}

// prefixReplacement returns a rule's ReplacePrefixMatch value, from its
// redirect or its rewrite.
func prefixReplacement(r *networking.HTTPRoute) (string, bool) {
	if v := r.GetRedirect().GetPrefixRewrite(); v != "" {
		return v, true
	}
	if v := r.GetRewrite().GetUri(); v != "" {
		return v, true
	}
	return "", false
}

func setPrefixReplacement(r *networking.HTTPRoute, v string) {
	if r.Redirect != nil {
		r.Redirect.PrefixRewrite = v
		return
	}
	r.Rewrite.Uri = v
}

// replacement is what Envoy's prefix rewrite of this piece must be for the
// Gateway API's ReplacePrefixMatch repl: "/foo" -> "/bar" maps "/foo" to
// "/bar" and "/foo/x" to "/bar/x"; "/" maps "/foo/x" to "/x".
func (p pathPiece) replacement(repl string) string {
	trimmed := strings.TrimRight(repl, "/")
	if p.below {
		return trimmed + "/"
	}
	return cmp.Or(trimmed, "/")
}

// nameSuffix tells apart the routes a split path match becomes.
func (p pathPiece) nameSuffix() string {
	if p.below {
		return "/below"
	}
	return "/exact"
}

// backendIn is one backendRef of any route kind.
type backendIn struct {
	ref     gw.BackendObjectReference
	weight  *int32
	filters int
}

// routeTo sets out's weighted destinations from a rule's backendRefs. A
// rule without any usable backend answers 500, as the specification asks.
// Among usable ones, the weight of the refused backends goes to one
// destination model.InvalidBackendHost, which Envoy answers with a 500:
// the requests that would have gone to an invalid backend get a 500, and
// the valid backends keep exactly their share.
func (c *converter) routeTo(out *networking.HTTPRoute, src, ns string, refs []backendIn, field string) {
	var invalid int64
	for k, b := range refs {
		bf := fmt.Sprintf("%s.backendRefs[%d]", field, k)
		if b.filters > 0 {
			c.warnf(src, bf+".filters", "per-backend filters are not supported; ignored")
		}
		w := deref(b.weight, 1)
		if w == 0 {
			continue
		}
		dest, ok := c.backend(src, ns, b.ref, bf)
		if !ok {
			invalid += int64(w)
			continue
		}
		out.Route = append(out.Route, &networking.HTTPRouteDestination{Destination: dest, Weight: w})
	}
	switch {
	case len(out.Route) == 0:
		out.Route = nil
		out.DirectResponse = &networking.HTTPDirectResponse{Status: 500}
		return
	case invalid > 0:
		// The CRD bounds each weight to 1,000,000 and a rule to 16
		// backendRefs, so the sum fits an int32.
		out.Route = append(out.Route, &networking.HTTPRouteDestination{
			Destination: &networking.Destination{Host: model.InvalidBackendHost}, Weight: int32(min(invalid, math.MaxInt32))})
	}
	if len(out.Route) == 1 {
		out.Route[0].Weight = 0
	}
}

// mirror converts a RequestMirror filter, or reports why not (nil).
func (c *converter) mirror(src, ns string, f *gw.HTTPRequestMirrorFilter, field string) *networking.HTTPMirrorPolicy {
	if f == nil {
		return nil
	}
	dest, ok := c.backend(src, ns, f.BackendRef, field+".backendRef")
	if !ok {
		return nil
	}
	m := &networking.HTTPMirrorPolicy{Destination: dest}
	if p := f.Percent; p != nil {
		m.Percentage = &networking.Percent{Value: float64(*p)}
	} else if fr := f.Fraction; fr != nil && deref(fr.Denominator, 100) > 0 {
		m.Percentage = &networking.Percent{Value: 100 * float64(fr.Numerator) / float64(deref(fr.Denominator, 100))}
	}
	return m
}
