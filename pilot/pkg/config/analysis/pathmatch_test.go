package analysis

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"
)

// Policy paths are read as istiod's pathGenerator reads them: templates
// first, then "*", suffix, prefix, exact.
func TestParsePolicyPath(t *testing.T) {
	for _, c := range []struct {
		in    string
		kind  pathKind
		value string
	}{
		{"*", pathAny, ""},
		{"/api/*", pathPrefix, "/api/"},
		{"*.css", pathSuffix, ".css"},
		{"/health", pathExact, "/health"},
		{"/api/{*}/orders", pathTemplate, "/api/{*}/orders"},
		{"/static/{**}", pathTemplate, "/static/{**}"},
	} {
		got := parsePolicyPath(c.in)
		if got.kind != c.kind || got.value != c.value {
			t.Errorf("parsePolicyPath(%q) = %d %q, want %d %q", c.in, got.kind, got.value, c.kind, c.value)
		}
	}
}

// Templates match whole paths as Envoy's uri_template does for the
// examples of istio/api's Operation.paths, and never narrower: "{*}"
// stays within one segment, "{**}" takes the rest.
func TestTemplateMatches(t *testing.T) {
	for _, c := range []struct {
		tmpl, path string
		prefix     bool
		want       bool
	}{
		// istio/api's examples.
		{"/foo/{*}", "/foo/bar", false, true},
		{"/foo/{*}", "/foo/bar/baz", false, false},
		{"/foo/{**}/", "/foo/bar/", false, true},
		{"/foo/{**}/", "/foo/bar/baz.txt", false, true},
		{"/foo/{**}/", "/foo//", false, true},
		{"/foo/{*}/bar/{**}", "/foo/buzz/bar/", false, true},
		{"/foo/{*}/bar/{**}", "/foo/buzz/bar/baz", false, true},
		{"/foo/{*}/bar/{**}", "/foo/buzz/baz/", false, false},
		// Literals must agree.
		{"/api/{*}/orders", "/api/v1/orders", false, true},
		{"/api/{*}/orders", "/api/v1/items", false, false},
		{"/api/{*}/orders", "/shop/v1/orders", false, false},
		// As prefixes: can some path starting with the route's prefix match?
		{"/api/{*}/orders", "/api/", true, true},
		{"/api/{*}/orders", "/ap", true, true},
		{"/api/{*}/orders", "/api/v1/ord", true, true},
		{"/api/{*}/orders", "/api/v1/items", true, false},
		{"/api/{*}/orders", "/static/", true, false},
		{"/static/{**}", "/static/css/", true, true},
		{"/static/{**}", "/api/", true, false},
		{"/{*}", "/a/b", true, false},
	} {
		if got := templateMatches(parsePolicyPath(c.tmpl).toks, c.path, c.prefix); got != c.want {
			t.Errorf("templateMatches(%q, %q, prefix %v) = %v, want %v", c.tmpl, c.path, c.prefix, got, c.want)
		}
	}
}

// A policy path and a route's URI condition overlap when some request
// path could match both; unknown conditions (regexes, for anything but
// an exact path) always overlap.
func TestPathOverlaps(t *testing.T) {
	exact := func(v string) routeURI { return routeURI{kind: "exact", value: v} }
	prefix := func(v string) routeURI { return routeURI{kind: "prefix", value: v} }
	for _, c := range []struct {
		path string
		uri  routeURI
		want bool
	}{
		{"*", exact("/x"), true},
		{"/admin", routeURI{}, true},
		{"/health", exact("/health"), true},
		{"/health", exact("/healthz"), false},
		{"/api/v1", prefix("/api/"), true},
		{"/api", prefix("/api/"), false},
		{"/api/*", prefix("/api/v1/"), true},
		{"/api/v1/*", prefix("/api/"), true},
		{"/api/*", prefix("/static/"), false},
		{"/api/*", exact("/api/x"), true},
		{"/api/*", exact("/apix"), false},
		{"*.css", prefix("/static/"), true},
		{"*.css", exact("/index.html"), false},
		{"/api/{*}/orders", prefix("/api/"), true},
		{"/api/{*}/orders", exact("/api/v1/orders"), true},
		{"/api/{*}/orders", exact("/api/v1/items"), false},
		{"/static/{**}", prefix("/api/"), false},
		{"/v1/items", routeURI{kind: "regex", value: "/v[0-9]+/.*"}, true},
		{"/other", routeURI{kind: "regex", value: "/v[0-9]+/.*"}, false},
		{"/other*", routeURI{kind: "regex", value: "/v[0-9]+/.*"}, true},
		{"/x", routeURI{kind: "regex", value: "("}, true}, // not RE2: unknown
		{"/catalog/*", routeURI{kind: "prefix", value: "/Catalog/", fold: true}, true},
		{"/catalog/*", prefix("/Catalog/"), false},
	} {
		if got := pathOverlaps(parsePolicyPath(c.path), c.uri); got != c.want {
			t.Errorf("pathOverlaps(%q, %v) = %v, want %v", c.path, c.uri, got, c.want)
		}
	}
}

// Hosts overlap when some Host could match the policy entry and be served
// for the VirtualService host; case and ports do not matter.
func TestHostsOverlap(t *testing.T) {
	for _, c := range []struct {
		policy, route string
		want          bool
	}{
		{"shop.example.com", "shop.example.com", true},
		{"Shop.Example.com:443", "shop.example.com", true},
		{"shop.example.com", "docs.example.com", false},
		{"*", "docs.example.com", true},
		{"shop.example.com", "*", true},
		{"*.example.com", "shop.example.com", true},
		{"*.example.com", "shop.example.org", false},
		{"*.example.com", "*.shop.example.com", true},
		{"*.shop.example.com", "*.example.com", true},
		{"*.example.com", "*.example.org", false},
		{"shop.*", "shop.example.com", true},
		{"shop.*", "docs.example.com", false},
		{"shop.*", "*.example.com", true},
		{"a.shop.example.com", "*.example.com", true},
		{"example.com", "*.example.com", false},
	} {
		if got := hostsOverlap(c.policy, c.route); got != c.want {
			t.Errorf("hostsOverlap(%q, %q) = %v, want %v", c.policy, c.route, got, c.want)
		}
	}
}

// Routes the Gateway API conversion generates are named after their
// HTTPRoute or GRPCRoute; other names belong to no route object.
func TestGatewayAPIOrigin(t *testing.T) {
	for _, c := range []struct {
		name string
		want routeRef
		ok   bool
	}{
		{"shop/orders/rules/0/matches/1", routeRef{kindHTTPRoute, "shop", "orders"}, true},
		{"shop/inventory/grpc/rules/2/matches/0", routeRef{kindGRPCRoute, "shop", "inventory"}, true},
		{"my-route", routeRef{}, false},
		{"/orders/rules/0", routeRef{}, false},
	} {
		got, ok := gatewayAPIOrigin(c.name)
		if got != c.want || ok != c.ok {
			t.Errorf("gatewayAPIOrigin(%q) = %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// A route without matches, with a match without uri, or delegating
// serves every path; otherwise one condition per match.
func TestRouteURIs(t *testing.T) {
	if got := routeURIs(&networking.HTTPRoute{}); len(got) != 1 || got[0].kind != "" {
		t.Errorf("no match: %v", got)
	}
	r := &networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{
		{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/api/"}}, IgnoreUriCase: true},
		{Method: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "GET"}}},
	}}
	got := routeURIs(r)
	if len(got) != 2 || got[0] != (routeURI{kind: "prefix", value: "/api/", fold: true}) || got[1].kind != "" {
		t.Errorf("two matches: %v", got)
	}
	r.Delegate = &networking.Delegate{Name: "shop"}
	if got := routeURIs(r); len(got) != 1 || got[0].kind != "" {
		t.Errorf("delegate: %v", got)
	}
}
