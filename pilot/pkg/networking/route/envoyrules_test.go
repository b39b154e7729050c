package route

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Each case below is something Envoy would reject the whole route table
// for. It must be reported on the one VirtualService, field and route, and
// the rest of the table still served.

// twoRoutes is a VirtualService with a route made of bad (YAML under the
// route, indented four spaces) and a good route after it.
func twoRoutes(bad string) string {
	return vs("v", "[foo.com]", `  - name: bad
`+bad+`
  - name: good
    match: [{uri: {prefix: /good}}]`+toReviews)
}

func mustServeGoodOnly(t *testing.T, rcs []*routev3.RouteConfiguration) {
	t.Helper()
	got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80"))
	if len(got) != 1 || got[0] != "good" {
		t.Errorf("routes %v, want only the good one", got)
	}
}

func TestRegexOverEnvoyProgramSizeIsReported(t *testing.T) {
	// 410 RE2 instructions (measured with RE2), Envoy's limit is 100.
	rcs, errs := build(t, fixtures, gatewayYAML, twoRoutes(`    match: [{uri: {regex: "^/[^/]{1,45}/?$"}}]`+toReviews))
	if !hasError(errs, false, "spec.http[0].match[0].uri.regex", "over Envoy's limit of 100") {
		t.Fatalf("want an error on the regex, got:\n%s", errString(errs))
	}
	if len(errs) != 1 || errs[0].Key.Name != "v" {
		t.Errorf("want exactly one error, on VirtualService v, got:\n%s", errString(errs))
	}
	mustServeGoodOnly(t, rcs)
}

func TestRegexOverLimitInHeaderAndRewrite(t *testing.T) {
	big := `"a{97}"` // 101 instructions, one over
	rcs, errs := build(t, fixtures, gatewayYAML, twoRoutes(`    match: [{headers: {x-id: {regex: `+big+`}}}]`+toReviews))
	if !hasError(errs, false, "spec.http[0].match[0].headers[x-id].regex", "over Envoy's limit") {
		t.Errorf("header regex: got:\n%s", errString(errs))
	}
	mustServeGoodOnly(t, rcs)

	rcs, errs = build(t, fixtures, gatewayYAML, twoRoutes(`    match: [{uri: {prefix: /x}}]
    rewrite: {uriRegexRewrite: {match: `+big+`, rewrite: /y}}`+toReviews))
	if !hasError(errs, false, "spec.http[0].rewrite.uriRegexRewrite.match", "over Envoy's limit") {
		t.Errorf("rewrite regex: got:\n%s", errString(errs))
	}
	mustServeGoodOnly(t, rcs)
}

func TestRegexAtEnvoyLimitIsServed(t *testing.T) {
	// a{96} is exactly 100 instructions in RE2: allowed, with a warning
	// that it is close.
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `  - name: r
    match: [{uri: {regex: "a{96}"}}]`+toReviews))
	if !hasError(errs, true, "spec.http[0].match[0].uri.regex", "close to Envoy's limit") {
		t.Errorf("want a warning, got:\n%s", errString(errs))
	}
	if r := onlyRoute(t, rcs); r.GetMatch().GetSafeRegex().GetRegex() != "a{96}" {
		t.Errorf("route %v", r)
	}
}

func TestRegexLimitDoesNotApplyToProxyless(t *testing.T) {
	// gRPC clients compile regexes themselves, without Envoy's limit.
	c := vsConfig(t)
	_, errs, ok := TranslateMatch(c, matchWithRegex("^/[^/]{1,45}/?$"), "spec.http[0].match[0]")
	if !ok || len(errs) != 0 {
		t.Errorf("proxyless match: ok %v errors %v", ok, errs)
	}
}

func TestDirectResponseOverLimitIsReported(t *testing.T) {
	body := strings.Repeat("x", MaxDirectResponseBody+1)
	rcs, errs := build(t, fixtures, gatewayYAML, twoRoutes(`    match: [{uri: {prefix: /big}}]
    directResponse: {status: 200, body: {string: "`+body+`"}}`))
	if !hasError(errs, false, "spec.http[0].directResponse.body.string", "over Envoy's 1048576 byte limit") {
		t.Errorf("got:\n%s", errString(errs))
	}
	mustServeGoodOnly(t, rcs)
}

func TestDirectResponseUpToLimitIsServed(t *testing.T) {
	// Over Envoy's 4 KiB default, within the 1 MiB the route table allows.
	body := strings.Repeat("x", 64<<10)
	rcs := buildOK(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `  - name: r
    directResponse: {status: 200, body: {string: "`+body+`"}}`))
	rc := routeConfig(t, rcs, "http.80")
	if rc.GetMaxDirectResponseBodySizeBytes().GetValue() < uint32(len(body)) {
		t.Errorf("limit %v below the body's %d bytes", rc.GetMaxDirectResponseBodySizeBytes(), len(body))
	}
	if got := onlyRoute(t, rcs).GetDirectResponse().GetBody().GetInlineString(); len(got) != len(body) {
		t.Errorf("body of %d bytes, want %d", len(got), len(body))
	}
}

func TestWeightsOverflowingEnvoysSumAreReported(t *testing.T) {
	rcs, errs := build(t, fixtures, gatewayYAML, twoRoutes(`    match: [{uri: {prefix: /split}}]
    route:
    - {destination: {host: reviews.default.svc.cluster.local}, weight: 2147483647}
    - {destination: {host: ratings.default.svc.cluster.local}, weight: 2147483647}
    - {destination: {host: multi.default.svc.cluster.local, port: {number: 80}}, weight: 2}`))
	if !hasError(errs, false, "spec.http[0].route", "more than Envoy's limit") {
		t.Errorf("got:\n%s", errString(errs))
	}
	mustServeGoodOnly(t, rcs)
}

func TestUpperCaseHeaderNamesAreLowerCasedWithAWarning(t *testing.T) {
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `  - name: r
    match: [{headers: {X-User: {exact: bob}}, withoutHeaders: {X-Debug: {}}}]`+toReviews))
	for _, f := range []string{"spec.http[0].match[0].headers[X-User]", "spec.http[0].match[0].withoutHeaders[X-Debug]"} {
		if !hasError(errs, true, f, "matched without case") {
			t.Errorf("want a warning on %s, got:\n%s", f, errString(errs))
		}
	}
	for _, e := range errs {
		if !e.Warning {
			t.Errorf("unexpected error %v", e)
		}
	}
	var names []string
	for _, h := range onlyRoute(t, rcs).GetMatch().GetHeaders() {
		names = append(names, h.GetName())
	}
	if strings.Join(names, ",") != "x-debug,x-user" {
		t.Errorf("header matchers %v, want x-debug,x-user", names)
	}
}

func TestDuplicateDomainIsLeftOut(t *testing.T) {
	claimed := newClaims(4)
	if d, _ := claimed.duplicate(&routev3.VirtualHost{Name: "a.com:80", Domains: []string{"a.com"}}); d != "" {
		t.Fatalf("first virtual host reported duplicate %q", d)
	}
	if d, owner := claimed.duplicate(&routev3.VirtualHost{Name: "other:80", Domains: []string{"b.com", "a.com"}}); d != "a.com" || owner != "a.com:80" {
		t.Errorf("duplicate = %q held by %q, want a.com held by a.com:80", d, owner)
	}
	if d, owner := claimed.duplicate(&routev3.VirtualHost{Name: "a.com:80", Domains: []string{"c.com"}}); d != "name a.com:80" || owner != "a.com:80" {
		t.Errorf("duplicate = %q held by %q, want the name", d, owner)
	}
	// A rejected virtual host claims nothing.
	if d, _ := claimed.duplicate(&routev3.VirtualHost{Name: "b.com:80", Domains: []string{"b.com"}}); d != "" {
		t.Errorf("b.com reported duplicate %q", d)
	}
}

func vsConfig(t *testing.T) *config.Config {
	t.Helper()
	return &config.Config{Meta: config.Meta{Kind: schema.VirtualService, Namespace: "default", Name: "v"}, Spec: &networking.VirtualService{}}
}

func matchWithRegex(re string) *networking.HTTPMatchRequest {
	return &networking.HTTPMatchRequest{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: re}}}
}
