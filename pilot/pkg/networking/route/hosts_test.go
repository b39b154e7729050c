package route

import (
	"slices"
	"testing"
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

func TestResolveShortname(t *testing.T) {
	cases := map[string]string{
		"reviews":                           "reviews.prod.svc.cluster.local",
		"Reviews":                           "reviews.prod.svc.cluster.local",
		"reviews.other":                     "reviews.other",
		"reviews.default.svc.cluster.local": "reviews.default.svc.cluster.local",
		"*":                                 "*",
		"*.example.com":                     "*.example.com",
		"10.1.2.3":                          "10.1.2.3",
		"::1":                               "::1",
		"":                                  "",
	}
	for in, want := range cases {
		if got := ResolveShortname(in, "prod"); got != want {
			t.Errorf("ResolveShortname(%q) = %q, want %q", in, got, want)
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
