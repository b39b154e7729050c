package route

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// statPrefixes maps each route's name to its stat_prefix, in order.
func statPrefixes(vh *routev3.VirtualHost) [][2]string {
	var out [][2]string
	for _, r := range vh.GetRoutes() {
		out = append(out, [2]string{r.GetName(), r.GetStatPrefix()})
	}
	return out
}

func samePrefixes(t *testing.T, got, want [][2]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("routes (name, stat_prefix) = %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("route %d (name, stat_prefix) = %q, want %q", i, got[i], want[i])
		}
	}
}

// A VirtualService's routes count under its namespace, name, HTTP route
// index and (when named) route name; all matches of one HTTP route share
// the prefix; dots and other characters that would split or garble the
// stat name become "_"; the virtual host keeps istiod's name.
func TestStatPrefixNamesVirtualServiceRule(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, vs("shop.v1", "[shop.example.com]", `
  - name: check.out
    match:
    - {name: cart, uri: {prefix: /cart}}
    - uri: {prefix: /pay}
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - route: [{destination: {host: ratings.default.svc.cluster.local}}]
`))
	vh := vhost(t, routeConfig(t, rcs, "http.80"), "shop.example.com:80")
	samePrefixes(t, statPrefixes(vh), [][2]string{
		{"check.out.cart", "vs/default/shop_v1/http/0/check_out"},
		{"check.out", "vs/default/shop_v1/http/0/check_out"},
		{"", "vs/default/shop_v1/http/1"},
	})
}

// A VirtualService generated from Gateway API routes (marked by the
// conversion) counts its routes under the HTTPRoute or GRPCRoute and rule
// their names carry; the same names in a hand-written VirtualService do
// not make it one.
func TestStatPrefixNamesGatewayAPIRule(t *testing.T) {
	const http = `
  - name: edge/shop.api/rules/2/matches/0/exact
    match: [{uri: {exact: /a}}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: edge/shop.api/rules/2/matches/1
    match: [{uri: {prefix: /b}}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: edge/store/grpc/rules/0/matches/0
    match: [{uri: {prefix: /pkg.Store/}}]
    route: [{destination: {host: ratings.default.svc.cluster.local}}]
  - name: not/a/route/name
    route: [{destination: {host: ratings.default.svc.cluster.local}}]
`
	generated := `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: gw-http-shop-example-com-gwapi
  namespace: default
  annotations: {internal.wayfinder.io/gateway-api-routes: "true"}
spec:
  hosts: [shop.example.com]
  gateways: [gw]
  http:
` + http
	vh := vhost(t, routeConfig(t, buildOK(t, fixtures, gatewayYAML, generated), "http.80"), "shop.example.com:80")
	samePrefixes(t, statPrefixes(vh), [][2]string{
		{"edge/shop.api/rules/2/matches/0/exact", "httproute/edge/shop_api/rule/2"},
		{"edge/shop.api/rules/2/matches/1", "httproute/edge/shop_api/rule/2"},
		{"edge/store/grpc/rules/0/matches/0", "grpcroute/edge/store/rule/0"},
		// Not a name the conversion gives: the VirtualService's own.
		{"not/a/route/name", "vs/default/gw-http-shop-example-com-gwapi/http/3/not_a_route_name"},
	})

	vh = vhost(t, routeConfig(t, buildOK(t, fixtures, gatewayYAML, vs("hand", "[shop.example.com]", http)), "http.80"), "shop.example.com:80")
	samePrefixes(t, statPrefixes(vh), [][2]string{
		{"edge/shop.api/rules/2/matches/0/exact", "vs/default/hand/http/0/edge_shop_api_rules_2_matches_0_exact"},
		{"edge/shop.api/rules/2/matches/1", "vs/default/hand/http/1/edge_shop_api_rules_2_matches_1"},
		{"edge/store/grpc/rules/0/matches/0", "vs/default/hand/http/2/edge_store_grpc_rules_0_matches_0"},
		{"not/a/route/name", "vs/default/hand/http/3/not_a_route_name"},
	})
}

func TestGatewayAPIStatPrefixRefusesOtherNames(t *testing.T) {
	for _, name := range []string{
		"", "ns/name", "ns/name/rules/x/matches/0", "ns/name/rules/0/match/0", "/name/rules/0/matches/0",
		"ns//rules/0/matches/0", "ns/name/grpc/rules/0", "ns/name/rules/-1/matches/0",
	} {
		if p, ok := gatewayAPIStatPrefix(name); ok {
			t.Errorf("gatewayAPIStatPrefix(%q) = %q, want refused", name, p)
		}
	}
}

// The marker that names a VirtualService's statistics after Gateway API
// routes is not part of its spec: adding it to an unchanged spec still
// retranslates the routes rather than serving the cached prefixes.
func TestStatPrefixFollowsMarkerThroughCache(t *testing.T) {
	doc := func(annotations string) string {
		return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: generated, namespace: default` + annotations + `}
spec:
  hosts: [shop.example.com]
  gateways: [gw]
  http:
  - name: edge/shop/rules/0/matches/0
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
`
	}
	cache := NewCache()
	for _, tc := range []struct{ annotations, want string }{
		{"", "vs/default/generated/http/0/edge_shop_rules_0_matches_0"},
		{`, annotations: {internal.wayfinder.io/gateway-api-routes: "true"}`, "httproute/edge/shop/rule/0"},
	} {
		rcs, _ := cachedBuild(t, cache, fixtures, gatewayYAML, doc(tc.annotations))
		if got := onlyRoute(t, rcs).GetStatPrefix(); got != tc.want {
			t.Errorf("annotations %q: stat_prefix %q, want %q", tc.annotations, got, tc.want)
		}
	}
}
