package route

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func exact(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
}

func prefix(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: s}}
}

func regex(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: s}}}
}

func header(name string, sm *matcherv3.StringMatcher) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: sm}}
}

func present(name string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}}
}

func query(name string, sm *matcherv3.StringMatcher) *routev3.QueryParameterMatcher {
	return &routev3.QueryParameterMatcher{Name: name, QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: sm}}
}

func rootPrefix() *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
}

func TestMatches(t *testing.T) {
	with := func(f func(m *routev3.RouteMatch)) *routev3.RouteMatch {
		m := rootPrefix()
		f(m)
		return m
	}
	cases := []struct {
		name  string
		match string // one HTTPMatchRequest, flow style
		want  *routev3.RouteMatch
	}{
		{"uri exact", `{uri: {exact: /login}}`, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/login"}}},
		{"uri prefix", `{uri: {prefix: /api}}`, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/api"}}},
		{"uri regex", `{uri: {regex: "/v[0-9]+/.*"}}`, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/v[0-9]+/.*"}}}},
		{"no uri is prefix /", `{headers: {x: {exact: "1"}}}`, with(func(m *routev3.RouteMatch) { m.Headers = []*routev3.HeaderMatcher{header("x", exact("1"))} })},
		{"ignoreUriCase", `{uri: {prefix: /API}, ignoreUriCase: true}`, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/API"}, CaseSensitive: wrapperspb.Bool(false)}},
		{"headers by kind, sorted", `{headers: {x-user: {exact: bob}, a-prefix: {prefix: pre}, b-regex: {regex: "v[12]"}, c-present: {}, d-star: {regex: "*"}, e-empty-prefix: {prefix: ""}}}`,
			with(func(m *routev3.RouteMatch) {
				m.Headers = []*routev3.HeaderMatcher{
					header("a-prefix", prefix("pre")), header("b-regex", regex("v[12]")),
					present("c-present"), present("d-star"), present("e-empty-prefix"), header("x-user", exact("bob")),
				}
			})},
		{"withoutHeaders", `{withoutHeaders: {x-debug: {exact: "1"}, x-canary: {}}}`, with(func(m *routev3.RouteMatch) {
			m.Headers = []*routev3.HeaderMatcher{
				{Name: "x-canary", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}, InvertMatch: true},
				{Name: "x-debug", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: exact("1")}, InvertMatch: true, TreatMissingHeaderAsEmpty: true},
			}
		})},
		{"method authority scheme after headers", `{scheme: {exact: https}, authority: {prefix: api.}, method: {exact: GET}, headers: {z: {exact: z}}}`,
			with(func(m *routev3.RouteMatch) {
				m.Headers = []*routev3.HeaderMatcher{header("z", exact("z")), header(":method", exact("GET")), header(":authority", prefix("api.")), header(":scheme", exact("https"))}
			})},
		{"query params sorted", `{queryParams: {v: {exact: "2"}, a: {regex: "[0-9]+"}, p: {prefix: x}, has: {}}}`, with(func(m *routev3.RouteMatch) {
			m.QueryParameters = []*routev3.QueryParameterMatcher{
				query("a", regex("[0-9]+")),
				{Name: "has", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}},
				query("p", prefix("x")), query("v", exact("2")),
			}
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcs := buildOK(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `
  - name: r
    match: [`+c.match+`]`+toReviews))
			got := onlyRoute(t, rcs).GetMatch()
			protoEqual(t, "match", got, c.want)
		})
	}
}

func TestMatchesAreAlternatives(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `
  - name: r
    match:
    - {name: one, uri: {prefix: /one}}
    - {uri: {exact: /two}}
    route:
    - destination: {host: reviews.default.svc.cluster.local}
`))
	routes := vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80").GetRoutes()
	if len(routes) != 2 {
		t.Fatalf("want one route per match, got %d", len(routes))
	}
	if routes[0].GetName() != "r.one" || routes[1].GetName() != "r" {
		t.Errorf("names = %q, %q; want r.one and r", routes[0].GetName(), routes[1].GetName())
	}
	if routes[0].GetMatch().GetPrefix() != "/one" || routes[1].GetMatch().GetPath() != "/two" {
		t.Errorf("matches = %v, %v", routes[0].GetMatch(), routes[1].GetMatch())
	}
	protoEqual(t, "actions", routes[0].GetRoute(), routes[1].GetRoute())
}

func TestBadMatches(t *testing.T) {
	cases := []struct {
		name, match, field, msg string
	}{
		{"bad uri regex", `{uri: {regex: "(unclosed"}}`, "spec.http[0].match[0].uri.regex", "invalid RE2 regex"},
		{"bad header regex", `{headers: {x: {regex: "a++"}}}`, "spec.http[0].match[0].headers[x].regex", "invalid RE2 regex"},
		{"jwt claims", `{headers: {"@request.auth.claims.group": {exact: admin}}}`, "spec.http[0].match[0].headers[@request.auth.claims.group]", "JWT claims"},
		{"bad header name", `{headers: {"bad header": {exact: x}}}`, "spec.http[0].match[0].headers[bad header]", "not a valid HTTP header name"},
		{"empty uri prefix", `{uri: {prefix: ""}}`, "spec.http[0].match[0].uri.prefix", "must not be empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `
  - name: bad
    match: [`+c.match+`, {uri: {prefix: /ok}}]`+toReviews))
			if !hasError(errs, false, c.field, c.msg) || len(errs) != 1 {
				t.Errorf("want one error %s: %s, got\n%s", c.field, c.msg, errString(errs))
			}
			// The bad alternative is skipped; the good one still routes.
			r := onlyRoute(t, rcs)
			if r.GetMatch().GetPrefix() != "/ok" {
				t.Errorf("remaining route matches %v", r.GetMatch())
			}
		})
	}
}
