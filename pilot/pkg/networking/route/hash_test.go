package route

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

const stickyRule = `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: multi, namespace: default}
spec:
  host: multi.default.svc.cluster.local
  trafficPolicy:
    loadBalancer: {consistentHash: {httpHeaderName: x-user}}
    portLevelSettings:
    - port: {number: 8080}
      loadBalancer: {consistentHash: {httpQueryParameterName: user}}
  subsets:
  - name: cookie
    labels: {v: c}
    trafficPolicy:
      loadBalancer:
        consistentHash:
          httpCookie: {name: session, path: /, ttl: 60s, attributes: [{name: SameSite, value: Strict}]}
  - name: ip
    labels: {v: i}
    trafficPolicy:
      loadBalancer: {consistentHash: {useSourceIp: true}}
      portLevelSettings:
      - port: {number: 8080}
        loadBalancer: {consistentHash: {httpHeaderName: x-port-subset}}
  - name: plain
    labels: {v: p}
`

func TestHashPolicyFromDestinationRule(t *testing.T) {
	header := func(n string) *routev3.RouteAction_HashPolicy {
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: n}}}
	}
	cases := []struct {
		name, dst string
		want      *routev3.RouteAction_HashPolicy
	}{
		{"rule", `{host: multi.default.svc.cluster.local, port: {number: 80}}`, header("x-user")},
		{"rule port level", `{host: multi.default.svc.cluster.local, port: {number: 8080}}`,
			&routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: "user"}}}},
		{"subset", `{host: multi.default.svc.cluster.local, port: {number: 80}, subset: cookie}`,
			&routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{
				Name: "session", Path: "/", Ttl: &durationpb.Duration{Seconds: 60},
				Attributes: []*routev3.RouteAction_HashPolicy_CookieAttribute{{Name: "SameSite", Value: "Strict"}}}}}},
		{"subset beats rule port level", `{host: multi.default.svc.cluster.local, port: {number: 8080}, subset: cookie}`,
			&routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{
				Name: "session", Path: "/", Ttl: &durationpb.Duration{Seconds: 60},
				Attributes: []*routev3.RouteAction_HashPolicy_CookieAttribute{{Name: "SameSite", Value: "Strict"}}}}}},
		{"subset source ip", `{host: multi.default.svc.cluster.local, port: {number: 80}, subset: ip}`,
			&routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}}},
		{"subset port level", `{host: multi.default.svc.cluster.local, port: {number: 8080}, subset: ip}`, header("x-port-subset")},
		{"subset without policy falls back to the rule", `{host: multi.default.svc.cluster.local, port: {number: 80}, subset: plain}`, header("x-user")},
		{"no rule", `{host: reviews.default.svc.cluster.local}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcs := buildOK(t, fixtures, stickyRule, gatewayYAML, vs("v", "[foo.com]", "  - route: [{destination: "+c.dst+"}]\n"))
			a := onlyRoute(t, rcs).GetRoute()
			if c.want == nil {
				if len(a.GetHashPolicy()) != 0 {
					t.Errorf("hash policy = %v, want none", a.GetHashPolicy())
				}
				if len(a.GetRetryPolicy().GetRetryHostPredicate()) != 1 {
					t.Errorf("a non-sticky route keeps the previous-hosts retry predicate")
				}
				return
			}
			if len(a.GetHashPolicy()) != 1 {
				t.Fatalf("hash policy = %v", a.GetHashPolicy())
			}
			protoEqual(t, "hash policy", a.GetHashPolicy()[0], c.want)
			// Retries of a sticky route go back to the hashed host.
			if got := a.GetRetryPolicy().GetRetryHostPredicate(); len(got) != 0 {
				t.Errorf("retry host predicate = %v, want none", got)
			}
		})
	}

	// Weighted: one policy per distinct kind, in destination order.
	rcs := buildOK(t, fixtures, stickyRule, gatewayYAML, vs("v", "[foo.com]", `
  - route:
    - {destination: {host: multi.default.svc.cluster.local, port: {number: 80}}, weight: 40}
    - {destination: {host: multi.default.svc.cluster.local, port: {number: 80}, subset: plain}, weight: 40}
    - {destination: {host: multi.default.svc.cluster.local, port: {number: 8080}}, weight: 20}
`))
	got := onlyRoute(t, rcs).GetRoute().GetHashPolicy()
	if len(got) != 2 || got[0].GetHeader().GetHeaderName() != "x-user" || got[1].GetQueryParameter().GetName() != "user" {
		t.Errorf("weighted hash policies = %v", got)
	}

	// Asking for other hosts explicitly keeps the predicate.
	rcs = buildOK(t, fixtures, stickyRule, gatewayYAML, vs("v", "[foo.com]", `
  - retries: {attempts: 2, retryIgnorePreviousHosts: true}
    route: [{destination: {host: multi.default.svc.cluster.local, port: {number: 80}}}]
`))
	if got := onlyRoute(t, rcs).GetRoute().GetRetryPolicy().GetRetryHostPredicate(); len(got) != 1 || got[0].GetName() != previousHostsName {
		t.Errorf("retry host predicate = %v", got)
	}
}

func TestRegexCatchAllMovesLast(t *testing.T) {
	older := strings.Replace(vs("a", "[foo.com]", `  - name: any
    match: [{uri: {regex: ".*"}}]`+toReviews), "namespace: default}", `namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}`, 1)
	newer := strings.Replace(vs("b", "[foo.com]", `  - name: specific
    match: [{uri: {prefix: /b}}]`+toReviews), "namespace: default}", `namespace: default, creationTimestamp: "2024-02-01T00:00:00Z"}`, 1)
	rcs, _ := build(t, fixtures, gatewayYAML, older, newer)
	if got := routeNames(vhost(t, routeConfig(t, rcs, "http.80"), "foo.com:80")); !slices.Equal(got, []string{"specific", "any"}) {
		t.Errorf("routes = %v; a regex .* route matches everything and goes last", got)
	}
}
