package route

import (
	"slices"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

func TestIntersectHosts(t *testing.T) {
	cases := []struct {
		name       string
		server, vs []string
		want       []string
	}{
		{"exact", []string{"foo.com"}, []string{"foo.com"}, []string{"foo.com"}},
		{"different", []string{"foo.com"}, []string{"bar.com"}, nil},
		{"server star", []string{"*"}, []string{"foo.com", "bar.com"}, []string{"bar.com", "foo.com"}},
		{"vs star", []string{"foo.com"}, []string{"*"}, []string{"foo.com"}},
		{"both star", []string{"*"}, []string{"*"}, []string{"*"}},
		{"vs wildcard narrows server exact", []string{"foo.example.com"}, []string{"*.example.com"}, []string{"foo.example.com"}},
		{"server wildcard keeps vs exact", []string{"*.example.com"}, []string{"foo.example.com"}, []string{"foo.example.com"}},
		{"nested wildcards pick narrower", []string{"*.example.com"}, []string{"*.a.example.com"}, []string{"*.a.example.com"}},
		{"wildcard needs a label", []string{"*.example.com"}, []string{"example.com"}, nil},
		{"suffix is per label", []string{"*.example.com"}, []string{"badexample.com"}, nil},
		{"duplicates collapse", []string{"*", "foo.com"}, []string{"foo.com"}, []string{"foo.com"}},
		{"several", []string{"a.com", "*.b.com"}, []string{"*", "x.b.com"}, []string{"*.b.com", "a.com", "x.b.com"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IntersectHosts(c.server, c.vs); !slices.Equal(got, c.want) {
				t.Errorf("IntersectHosts(%v, %v) = %v, want %v", c.server, c.vs, got, c.want)
			}
		})
	}
}

func TestParseServerHost(t *testing.T) {
	cases := []struct {
		in       string
		want     serverHost
		allowed  []string
		rejected []string
	}{
		{"foo.com", serverHost{"*", "foo.com"}, []string{"a", "istio-system"}, nil},
		{"*/foo.com", serverHost{"*", "foo.com"}, []string{"a", "b"}, nil},
		{"prod/foo.com", serverHost{"prod", "foo.com"}, []string{"prod"}, []string{"default", "gwns"}},
		{"./*", serverHost{"gwns", "*"}, []string{"gwns"}, []string{"prod"}},
		{"Prod/FOO.com", serverHost{"Prod", "foo.com"}, []string{"Prod"}, []string{"prod"}},
	}
	for _, c := range cases {
		got := parseServerHost(c.in, "gwns")
		if got != c.want {
			t.Errorf("parseServerHost(%q) = %+v, want %+v", c.in, got, c.want)
		}
		for _, ns := range c.allowed {
			if !got.allows(ns) {
				t.Errorf("%q should allow namespace %s", c.in, ns)
			}
		}
		for _, ns := range c.rejected {
			if got.allows(ns) {
				t.Errorf("%q should not allow namespace %s", c.in, ns)
			}
		}
	}
}

func TestVirtualHostDomains(t *testing.T) {
	cases := []struct {
		host string
		want []string
	}{
		// istiod 1.29 (gateway.go buildGatewayHTTPRouteConfig): the host
		// alone; ignore_port_in_host_matching covers any port.
		{"*", []string{"*"}},
		{"foo.com", []string{"foo.com"}},
		{"*.foo.com", []string{"*.foo.com"}},
		{"::1", []string{"::1", "[::1]"}},
	}
	for _, c := range cases {
		if got := virtualHostDomains(c.host); !slices.Equal(got, c.want) {
			t.Errorf("virtualHostDomains(%q) = %v, want %v", c.host, got, c.want)
		}
	}
	if got := virtualHostName("foo.com", 80); got != "foo.com:80" {
		t.Errorf("virtualHostName = %q", got)
	}
}

// Short names, in a VirtualService's hosts and its destinations, complete
// with the push context's cluster domain (--domain-suffix), not a
// constant: under example.internal "reviews" reaches
// reviews.default.svc.example.internal and its subset.
func TestShortNamesUseDomainSuffix(t *testing.T) {
	cfgs, perrs := manifest.Parse("test.yaml", []byte(`
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.example.internal]
  ports: [{number: 9080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews
  subsets: [{name: v1, labels: {version: v1}}]
---
`+gatewayYAML+`
---
`+vs("short", "[reviews]", `  - route: [{destination: {host: reviews, subset: v1}}]
`)), manifest.Options{})
	if len(perrs) > 0 {
		t.Fatalf("parse: %v", perrs)
	}
	push := model.NewScopedPushContext(model.Scoping{DomainSuffix: "example.internal"}, memory.New(cfgs))
	rcs, errs := BuildGatewayRoutes(push, model.MergeGateways(push.Gateways()))
	if len(errs) > 0 {
		t.Fatalf("unexpected errors:\n%s", errString(errs))
	}
	vh := vhost(t, routeConfig(t, rcs, "http.80"), "reviews.default.svc.example.internal:80")
	if got, want := vh.GetRoutes()[0].GetRoute().GetCluster(), "outbound|9080|v1|reviews.default.svc.example.internal"; got != want {
		t.Errorf("cluster %q, want %q", got, want)
	}
}
