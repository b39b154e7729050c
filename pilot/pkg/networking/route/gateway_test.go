package route

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
)

const toReviews = `
    route:
    - destination: {host: reviews.default.svc.cluster.local}
`

func TestBasicBinding(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, vs("bookinfo", "[bookinfo.com]", `  - name: all`+toReviews))
	if len(rcs) != 1 {
		t.Fatalf("want 1 route config, got %d", len(rcs))
	}
	rc := rcs[0]
	if rc.GetName() != "http.80" || rc.GetValidateClusters().GetValue() != false || rc.GetValidateClusters() == nil {
		t.Errorf("route config name %q validate_clusters %v; want http.80 and explicit false", rc.GetName(), rc.GetValidateClusters())
	}
	vh := vhost(t, rc, "bookinfo.com:80")
	if !slices.Equal(vh.GetDomains(), []string{"bookinfo.com"}) {
		t.Errorf("domains = %v", vh.GetDomains())
	}
	if !vh.GetIncludeRequestAttemptCount() || vh.GetRequireTls() != routev3.VirtualHost_NONE {
		t.Errorf("include_request_attempt_count %v require_tls %v", vh.GetIncludeRequestAttemptCount(), vh.GetRequireTls())
	}
	r := onlyRoute(t, rcs)
	if r.GetName() != "all" || r.GetMatch().GetPrefix() != "/" {
		t.Errorf("route name %q match %v", r.GetName(), r.GetMatch())
	}
	if got := r.GetRoute().GetCluster(); got != "outbound|9080||reviews.default.svc.cluster.local" {
		t.Errorf("cluster = %q", got)
	}
}

func TestHostsAndNamespaces(t *testing.T) {
	gw := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: gwns}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["prod/*.prod.com", "./gw.com", "*/any.com", "plain.com", "*.wild.com"]
`
	mk := func(name, ns, hosts, gateways string) string {
		return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  hosts: ` + hosts + `
  gateways: ` + gateways + `
  http:
  - name: ` + name + `
    route:
    - destination: {host: reviews.default.svc.cluster.local}
`
	}
	cases := []struct {
		name string
		vs   string
		want []string // virtual host names on port 80
	}{
		{"namespace-restricted host, right namespace", mk("a", "prod", "[api.prod.com]", "[gwns/gw]"), []string{"api.prod.com:80"}},
		{"namespace-restricted host, wrong namespace", mk("a", "dev", "[api.prod.com]", "[gwns/gw]"), nil},
		{"dot means the gateway's namespace", mk("a", "gwns", "[gw.com]", "[gw]"), []string{"gw.com:80"}},
		{"dot rejects other namespaces", mk("a", "prod", "[gw.com]", "[gwns/gw]"), nil},
		{"star namespace", mk("a", "dev", "[any.com]", "[gwns/gw]"), []string{"any.com:80"}},
		{"no namespace part", mk("a", "dev", "[plain.com]", "[gwns/gw]"), []string{"plain.com:80"}},
		{"vs star takes the server's allowed hosts", mk("a", "dev", `["*"]`, "[gwns/gw]"), []string{"*.wild.com:80", "any.com:80", "plain.com:80"}},
		{"vs wildcard meets server wildcard", mk("a", "dev", `["*.com"]`, "[gwns/gw]"), []string{"*.wild.com:80", "any.com:80", "plain.com:80"}},
		{"vs exact under server wildcard", mk("a", "dev", "[x.wild.com, nope.com]", "[gwns/gw]"), []string{"x.wild.com:80"}},
		{"short gateway name resolves in the vs namespace", mk("a", "dev", "[any.com]", "[gw]"), nil},
		{"mesh is not a gateway", mk("a", "gwns", "[any.com]", "[mesh]"), nil},
		{"no hosts in common", mk("a", "dev", "[other.org]", "[gwns/gw]"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcs, _ := build(t, fixtures, gw, c.vs)
			rc := routeConfig(t, rcs, "http.80")
			got := vhostNames(rc)
			if c.want == nil {
				if !slices.Equal(got, []string{"blackhole:80"}) {
					t.Errorf("virtual hosts = %v, want only the blackhole", got)
				}
				return
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("virtual hosts = %v, want %v", got, c.want)
			}
		})
	}
}

func TestWildcardVirtualHostDomains(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, vs("w", `["*.example.com", "*"]`, `  - name: r`+toReviews))
	rc := routeConfig(t, rcs, "http.80")
	if got := vhostNames(rc); !slices.Equal(got, []string{"*.example.com:80", "*:80"}) {
		t.Fatalf("virtual hosts = %v", got)
	}
	if d := vhost(t, rc, "*:80").GetDomains(); !slices.Equal(d, []string{"*"}) {
		t.Errorf("* domains = %v", d)
	}
	if d := vhost(t, rc, "*.example.com:80").GetDomains(); !slices.Equal(d, []string{"*.example.com"}) {
		t.Errorf("*.example.com domains = %v", d)
	}
}

func TestBlackholeWhenNothingBound(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML)
	rc := routeConfig(t, rcs, "http.80")
	want := &routev3.RouteConfiguration{
		Name:             "http.80",
		VirtualHosts:     []*routev3.VirtualHost{{Name: "blackhole:80", Domains: []string{"*"}}},
		ValidateClusters: rc.GetValidateClusters(),
		// istiod 1.29's gateway route configuration defaults.
		IgnorePortInHostMatching:       true,
		MaxDirectResponseBodySizeBytes: rc.GetMaxDirectResponseBodySizeBytes(),
	}
	protoEqual(t, "route config", rc, want)
	if got := rc.GetMaxDirectResponseBodySizeBytes().GetValue(); got != 1<<20 {
		t.Errorf("max_direct_response_body_size_bytes = %d, want istiod's 1 MiB", got)
	}
}

func TestHTTPSRedirect(t *testing.T) {
	gw := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [secure.com, bare.com]
    tls: {httpsRedirect: true}
  - port: {number: 80, name: http2, protocol: HTTP}
    hosts: [open.com]
`
	rcs := buildOK(t, fixtures, gw, vs("a", "[secure.com, open.com]", `  - name: r`+toReviews))
	rc := routeConfig(t, rcs, "http.80")
	if got := vhostNames(rc); !slices.Equal(got, []string{"bare.com:80", "open.com:80", "secure.com:80"}) {
		t.Fatalf("virtual hosts = %v", got)
	}
	secure, bare, open := vhost(t, rc, "secure.com:80"), vhost(t, rc, "bare.com:80"), vhost(t, rc, "open.com:80")
	if secure.GetRequireTls() != routev3.VirtualHost_ALL || len(secure.GetRoutes()) != 1 {
		t.Errorf("secure.com: require_tls %v, %d routes; want ALL and its route", secure.GetRequireTls(), len(secure.GetRoutes()))
	}
	if bare.GetRequireTls() != routev3.VirtualHost_ALL || len(bare.GetRoutes()) != 0 {
		t.Errorf("bare.com: require_tls %v, %d routes; want ALL and no routes", bare.GetRequireTls(), len(bare.GetRoutes()))
	}
	if open.GetRequireTls() != routev3.VirtualHost_NONE {
		t.Errorf("open.com should not require TLS")
	}
}

func TestPortsAndMatchPort(t *testing.T) {
	gw := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  servers:
  - port: {number: 8080, name: alt, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
`
	rcs, errs := build(t, fixtures, gw, vs("a", "[foo.com]", `
  - name: only-8080
    match: [{port: 8080, uri: {prefix: /alt}}]
    route:
    - destination: {host: reviews.default.svc.cluster.local}
  - name: port-catch-all
    match: [{port: 80}]
    route:
    - destination: {host: ratings.default.svc.cluster.local}
  - name: everywhere
    match: [{uri: {prefix: /x}}]
    route:
    - destination: {host: reviews.default.svc.cluster.local}
`))
	if len(rcs) != 2 || rcs[0].GetName() != "http.80" || rcs[1].GetName() != "http.8080" {
		t.Fatalf("want http.80 then http.8080, got %v", rcs)
	}
	// On 80 the port-restricted match is a catch-all, so the route after it
	// is dropped there, with a warning.
	if len(errs) != 1 || !hasError(errs, true, "spec.http[2]", "never matches on port 80: spec.http[1].match[0] before it matches every request") {
		t.Errorf("errors:\n%s", errString(errs))
	}
	if got := routeNames(vhost(t, rcs[0], "foo.com:80")); !slices.Equal(got, []string{"port-catch-all"}) {
		t.Errorf("port 80 routes = %v", got)
	}
	if got := routeNames(vhost(t, rcs[1], "foo.com:8080")); !slices.Equal(got, []string{"only-8080", "everywhere"}) {
		t.Errorf("port 8080 routes = %v", got)
	}
}

func TestMatchGateways(t *testing.T) {
	gws := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw-a, namespace: default}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw-b, namespace: other}
spec:
  servers:
  - port: {number: 81, name: http, protocol: HTTP}
    hosts: ["*"]
`
	v := `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v, namespace: default}
spec:
  hosts: [foo.com]
  gateways: [gw-a, other/gw-b]
  http:
  - name: a-only
    match: [{uri: {prefix: /a}, gateways: [gw-a]}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: b-only
    match: [{uri: {prefix: /b}, gateways: [other/gw-b]}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: both
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
`
	rcs := buildOK(t, fixtures, gws, v)
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80")); !slices.Equal(got, []string{"a-only", "both"}) {
		t.Errorf("gw-a routes = %v", got)
	}
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.81"), "foo.com:81")); !slices.Equal(got, []string{"b-only", "both"}) {
		t.Errorf("gw-b routes = %v", got)
	}
}

func TestSameVirtualServiceThroughTwoGateways(t *testing.T) {
	gws := strings.ReplaceAll(gatewayYAML, "name: gw,", "name: gw-a,") + "---\n" + strings.ReplaceAll(gatewayYAML, "name: gw,", "name: gw-b,")
	v := strings.Replace(vs("v", "[foo.com]", `  - name: r`+toReviews), "gateways: [gw]", "gateways: [gw-a, gw-b]", 1)
	rcs := buildOK(t, fixtures, gws, v)
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80")); !slices.Equal(got, []string{"r"}) {
		t.Errorf("routes = %v, want the route once", got)
	}
}

func TestOrderingAcrossVirtualServices(t *testing.T) {
	mk := func(name, created, http string) string {
		return strings.Replace(vs(name, "[shop.com]", http), "namespace: default}", "namespace: default, creationTimestamp: \""+created+"\"}", 1)
	}
	route := func(name, prefix string) string {
		m := ""
		if prefix != "" {
			m = "\n    match: [{uri: {prefix: " + prefix + "}}]"
		}
		return "  - name: " + name + m + toReviews
	}
	// Names run against creation order, to show creation wins.
	rcs, errs := build(t, fixtures, gatewayYAML,
		mk("a-newest", "2024-03-01T00:00:00Z", route("new-specific", "/new")+route("new-all", "")),
		mk("b-oldest", "2024-01-01T00:00:00Z", route("old-specific", "/old")+route("old-all", "/")),
		mk("c-middle", "2024-02-01T00:00:00Z", route("mid-specific", "/mid")),
	)
	got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "shop.com:80"))
	want := []string{"old-specific", "mid-specific", "new-specific", "old-all", "new-all"}
	if !slices.Equal(got, want) {
		t.Errorf("route order = %v, want %v", got, want)
	}
	for _, w := range []struct{ field, msg string }{
		{"spec.hosts", "host shop.com on port 80 is also bound by VirtualService default/b-oldest"},
		{"spec.http[1]", "never matches for host shop.com on port 80: VirtualService default/b-oldest spec.http[1].match[0] matches every request first"},
	} {
		if !hasError(errs, true, w.field, w.msg) {
			t.Errorf("missing warning %s: %s in\n%s", w.field, w.msg, errString(errs))
		}
	}
	conflicts := 0
	for _, e := range errs {
		if e.Field == "spec.hosts" {
			conflicts++
			if e.Key.Name == "b-oldest" {
				t.Errorf("the oldest VirtualService should not be warned about: %v", e)
			}
		}
	}
	if conflicts != 2 || len(errs) != 3 {
		t.Errorf("want 2 host warnings and 1 shadow warning, got\n%s", errString(errs))
	}
}

func TestUnreachableWarnings(t *testing.T) {
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `
  - name: first
    match: [{uri: {prefix: /a}}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: dup
    match: [{uri: {prefix: /a}}]
    route: [{destination: {host: ratings.default.svc.cluster.local}}]
  - name: all
    match: [{uri: {prefix: /}}, {uri: {prefix: /after}}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: dropped
    match: [{uri: {prefix: /z}}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
`))
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80")); !slices.Equal(got, []string{"first", "dup", "all"}) {
		t.Errorf("routes = %v", got)
	}
	want := []struct{ field, msg string }{
		{"spec.http[2].match[1]", "never matches on port 80: spec.http[2].match[0] before it matches every request; dropped"},
		{"spec.http[3]", "never matches on port 80: spec.http[2].match[0] before it matches every request; dropped"},
		{"spec.http[1].match[0]", "never matches for host foo.com on port 80: spec.http[0].match[0] has the same match conditions"},
	}
	for _, w := range want {
		if !hasError(errs, true, w.field, w.msg) {
			t.Errorf("missing warning %s: %s in\n%s", w.field, w.msg, errString(errs))
		}
	}
	if len(errs) != len(want) {
		t.Errorf("want %d warnings, got\n%s", len(want), errString(errs))
	}
	for _, e := range errs {
		if e.Key.Name != "v" || e.Source != "test.yaml (document 6)" {
			t.Errorf("warning not located at the VirtualService: %+v", e)
		}
	}
}

func TestUnknownSubsetSkipsOnlyThatRoute(t *testing.T) {
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `
  - name: bad
    match: [{uri: {prefix: /bad}}]
    route:
    - destination: {host: reviews.default.svc.cluster.local, subset: v9}
  - name: good
    route:
    - destination: {host: reviews.default.svc.cluster.local, subset: v1}
`))
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80")); !slices.Equal(got, []string{"good"}) {
		t.Errorf("routes = %v, want only good", got)
	}
	if len(errs) != 1 || errs[0].Warning || errs[0].Field != "spec.http[0].route[0].destination.subset" ||
		errs[0].Key.Name != "v" || !strings.Contains(errs[0].Message, `subset "v9" is not defined`) {
		t.Errorf("errors = \n%s", errString(errs))
	}
}

func TestVirtualServiceRoutesSharedByItsHosts(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, vs("v", "[a.com, b.com]", `  - name: r`+toReviews))
	rc := routeConfig(t, rcs, "http.80")
	a, b := vhost(t, rc, "a.com:80"), vhost(t, rc, "b.com:80")
	if !proto.Equal(a.GetRoutes()[0], b.GetRoutes()[0]) {
		t.Errorf("hosts of one VirtualService should get the same routes")
	}
	// Translated once: the output is never edited, so the hosts share it.
	if a.GetRoutes()[0] != b.GetRoutes()[0] {
		t.Errorf("a VirtualService's routes were copied for each of its hosts")
	}
}

func TestInputOrderDoesNotMatter(t *testing.T) {
	docs := []string{fixtures, gatewayYAML,
		vs("a", "[foo.com, bar.com]", `  - name: a`+toReviews),
		vs("b", "[bar.com]", `  - name: b
    match: [{uri: {prefix: /b}}]`+toReviews),
	}
	rcs1, errs1 := build(t, docs...)
	slices.Reverse(docs)
	rcs2, errs2 := build(t, docs...)
	if len(rcs1) != len(rcs2) || !proto.Equal(rcs1[0], rcs2[0]) {
		t.Errorf("output depends on input order:\n%v\n%v", rcs1, rcs2)
	}
	// Error sources name documents, which moved; the rest must agree.
	if len(errs1) != len(errs2) {
		t.Errorf("errors depend on input order:\n%s\n%s", errString(errs1), errString(errs2))
	}
}

func TestMultipleServersMerged(t *testing.T) {
	gws := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [a.com]
  - port: {number: 80, name: http-b, protocol: HTTP}
    hosts: [b.com]
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [c.com]
    tls: {mode: SIMPLE, credentialName: cert}
`
	rcs, errs := build(t, fixtures, gws, vs("v", `["*"]`, `  - name: r`+toReviews))
	if len(rcs) != 2 {
		t.Fatalf("want the HTTP port and the HTTPS server, got %d configs", len(rcs))
	}
	if got := vhostNames(routeConfig(t, rcs, "http.80")); !slices.Equal(got, []string{"a.com:80", "b.com:80"}) {
		t.Errorf("virtual hosts = %v", got)
	}
	// The HTTPS server has its own configuration with only its hosts.
	if got := vhostNames(routeConfig(t, rcs, "https.443.https.gw.default")); !slices.Equal(got, []string{"c.com:443"}) {
		t.Errorf("HTTPS virtual hosts = %v", got)
	}
	if len(errs) != 0 {
		t.Errorf("unexpected errors:\n%s", errString(errs))
	}
}

func TestErrorsReportedOncePerProblem(t *testing.T) {
	gw := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 8080, name: alt, protocol: HTTP}
    hosts: ["*"]
`
	_, errs := build(t, fixtures, gw, vs("v", "[a.com, b.com]", `
  - route: [{destination: {host: reviews.default.svc.cluster.local, subset: nope}}]
`))
	if len(errs) != 1 {
		t.Errorf("one problem seen on two ports and two hosts should be one error, got\n%s", errString(errs))
	}
}

func TestInvalidEnvoyRouteIsSkipped(t *testing.T) {
	// Envoy forbids newlines in header values; proto validation catches it
	// before the whole route configuration would be rejected.
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `
  - name: bad
    match: [{uri: {prefix: /bad}}]
    headers: {request: {set: {x-a: "one\ntwo"}}}`+toReviews+`
  - name: good`+toReviews))
	if len(errs) != 1 || !hasError(errs, false, "spec.http[0].match[0]", "generated Envoy route is invalid, route skipped") {
		t.Errorf("errors:\n%s", errString(errs))
	}
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80")); !slices.Equal(got, []string{"good"}) {
		t.Errorf("routes = %v", got)
	}
}

// A route restricted to another port is not "shadowed" on this one: it is
// simply not there, and no warning is given.
func TestRouteForOtherPortIsNotShadowed(t *testing.T) {
	gw := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  servers:
  - port: {number: 8080, name: alt, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 9090, name: grpc, protocol: GRPC}
    hosts: ["*"]
`
	rcs, errs := build(t, fixtures, gw, vs("a", "[foo.com]", `
  - name: on-8080
    match: [{port: 8080}]
    route:
    - destination: {host: reviews.default.svc.cluster.local}
  - name: on-9090
    match: [{port: 9090}, {port: 7070}]
    route:
    - destination: {host: ratings.default.svc.cluster.local}
`))
	if len(errs) != 0 {
		t.Errorf("no warnings expected, got %v", errs)
	}
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.8080"), "foo.com:8080")); !slices.Equal(got, []string{"on-8080"}) {
		t.Errorf("8080 routes %v", got)
	}
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.9090"), "foo.com:9090")); !slices.Equal(got, []string{"on-9090"}) {
		t.Errorf("9090 routes %v", got)
	}
}
