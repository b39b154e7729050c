package model

import (
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func testRule(ns, name, host string, exportTo []string, subsets ...string) config.Config {
	c := objects.DestinationRule(ns, name, host, subsets...)
	c.Spec.(*networking.DestinationRule).ExportTo = exportTo
	return c
}

func subsetNames(c *config.Config) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range c.Spec.(*networking.DestinationRule).GetSubsets() {
		out = append(out, s.GetName())
	}
	return out
}

// TestDestinationRuleLookupParity is istiod 1.29's
// TestSetDestinationRuleWithExportTo (pilot/pkg/model/push_context_test.go),
// case for case, against drIndex.lookup, which follows
// PushContext.destinationRule.
func TestDestinationRuleLookupParity(t *testing.T) {
	const testhost, appHost = "httpbin.org", "foo.app.org"
	rules := []config.Config{
		testRule("test1", "rule1", testhost, []string{".", "ns1"}, "subset1", "subset2"),
		testRule("test2", "rule2", testhost, []string{"test2", "ns1", "test1", "newNS"}, "subset3", "subset4"),
		testRule("test3", "rule3", testhost, []string{"test1", "test2", "*"}, "subset5", "subset6"),
		testRule("test4", "rule4-local", testhost, []string{"test4"}, "subset15", "subset16"),
		testRule("istio-system", "rule4", testhost, nil, "subset7", "subset8"),
		testRule("istio-system", "rule1", testhost, []string{"."}, "subset9", "subset10"),
		testRule("istio-system", "rule2", "*.org", []string{"."}, "subset11", "subset12"),
		testRule("istio-system", "rule3", "*.app.org", []string{"."}, "subset13", "subset14"),
		testRule("test5", "rule5", "api.test.com", []string{"istio-system"}, "subset5-0", "subset5-1"),
		testRule("test6", "rule6", "api.test.com", []string{"istio-system"}, "subset6-0", "subset6-1"),
	}
	ix := indexDestinationRules(rules, Scoping{}.withDefaults())
	for _, tc := range []struct {
		proxyNS, svcNS, host string
		want                 []string
	}{
		{"test1", "test1", testhost, []string{"subset1", "subset2"}},
		{"test1", "test2", testhost, []string{"subset1", "subset2"}},
		{"test2", "test1", testhost, []string{"subset3", "subset4"}},
		{"newNS", "test2", testhost, []string{"subset3", "subset4"}},
		{"test3", "test1", testhost, []string{"subset5", "subset6"}},
		{"test5", "test4", testhost, []string{"subset7", "subset8"}},
		{"ns1", "test1", testhost, []string{"subset1", "subset2"}},
		{"ns1", "random", testhost, []string{"subset7", "subset8"}},
		{"random", "random", testhost, []string{"subset7", "subset8"}},
		{"test3", "random", testhost, []string{"subset5", "subset6"}},
		{"istio-system", "random", testhost, []string{"subset9", "subset10"}},
		{"istio-system", "istio-system", testhost, []string{"subset9", "subset10"}},
		{"istio-system", "istio-system", appHost, []string{"subset13", "subset14"}},
		// The service namespace's rule reaches a root-namespace proxy.
		{"istio-system", "test5", "api.test.com", []string{"subset5-0", "subset5-1"}},
		{"istio-system", "test6", "api.test.com", []string{"subset6-0", "subset6-1"}},
		// Neither the proxy's nor the service's: not applied.
		{"istio-system", "test7", "api.test.com", nil},
	} {
		t.Run(tc.proxyNS+"-"+tc.svcNS, func(t *testing.T) {
			out := ix.lookup(tc.proxyNS, tc.svcNS, tc.host, "istio-system")
			var got []string
			if len(out) > 0 {
				got = subsetNames(out[0].rule)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("subsets = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDestinationRuleMergingParity is istiod 1.29's
// TestSetDestinationRuleMerging: rules of one namespace and host with the
// same exportTo merge; a rule exported elsewhere stays apart.
func TestDestinationRuleMergingParity(t *testing.T) {
	rules := []config.Config{
		testRule("test", "rule1", "httpbin.org", nil, "subset1", "subset2"),
		testRule("test", "rule2", "httpbin.org", nil, "subset3", "subset4"),
		testRule("test", "rule3", "httpbin.org", []string{"istio-system"}, "subset5", "subset6"),
	}
	ix := indexDestinationRules(rules, Scoping{}.withDefaults())
	private := ix.namespaceLocal["test"].specific["httpbin.org"]
	public := ix.exported["test"].specific["httpbin.org"]
	if len(private) != 1 || len(public) != 2 {
		t.Fatalf("private %d, exported %d merged rules; want 1 and 2", len(private), len(public))
	}
	want := []config.Key{rules[0].Key(), rules[1].Key()}
	if !slices.Equal(private[0].from, want) || !slices.Equal(public[0].from, want) {
		t.Errorf("merged from %v and %v, want %v", private[0].from, public[0].from, want)
	}
	if n := len(subsetNames(private[0].rule)); n != 4 {
		t.Errorf("merged rule has %d subsets, want 4", n)
	}
	if !slices.Equal(public[1].from, []config.Key{rules[2].Key()}) || len(subsetNames(public[1].rule)) != 2 || !public[1].exportTo.has("istio-system") {
		t.Errorf("rule3 kept apart: %+v", public[1])
	}
	// The store's objects are never changed by a merge.
	if n := len(rules[0].Spec.(*networking.DestinationRule).GetSubsets()); n != 2 {
		t.Errorf("rule1 in the store now has %d subsets", n)
	}
}

// TestDestinationRuleWorkloadSelector follows istiod's
// SidecarScope.DestinationRule: a rule with a workloadSelector applies to
// the proxies of its namespace it selects, before the catch-all rule.
func TestDestinationRuleWorkloadSelector(t *testing.T) {
	sel := testRule("edge", "selected", "a.bank.svc.cluster.local", nil, "sel")
	sel.Spec.(*networking.DestinationRule).WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "gw"}}
	all := testRule("edge", "all", "a.bank.svc.cluster.local", nil, "all")
	ps := NewPushContext(listStore{sel, all}, staticRegistry{{Hostname: "a.bank.svc.cluster.local", Namespace: "bank", Ports: []Port{{Number: 80, Protocol: "HTTP"}}}})
	for _, tc := range []struct {
		proxy *Proxy
		want  string
	}{
		{&Proxy{Namespace: "edge", Labels: map[string]string{"app": "gw"}}, "sel"},
		{&Proxy{Namespace: "edge", Labels: map[string]string{"app": "other"}}, "all"},
		{&Proxy{Namespace: "other", Labels: map[string]string{"app": "gw"}}, ""},
	} {
		got := strings.Join(subsetNames(ps.ForProxy(tc.proxy).DestinationRuleForHost("a.bank.svc.cluster.local")), ",")
		if got != tc.want {
			t.Errorf("proxy %s %v: subsets %q, want %q", tc.proxy.Namespace, tc.proxy.Labels, got, tc.want)
		}
	}
	a, b := ps.ViewKey(&Proxy{Namespace: "edge", Labels: map[string]string{"app": "gw"}}), ps.ViewKey(&Proxy{Namespace: "edge"})
	if a == b || a == "" || b != "edge" {
		t.Errorf("view keys %q and %q: want distinct, the second \"edge\"", a, b)
	}
}

type staticRegistry []*Service

func (r staticRegistry) Services() []*Service { return r }

const scopeInput = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: bank, namespace: bank}
spec:
  hosts: [api.bank.example]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: shop, namespace: shop}
spec:
  hosts: [api.shop.example]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: private, namespace: shop}
spec:
  hosts: [private.shop.example]
  exportTo: ["."]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: evil, namespace: evil, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  host: "*"
  trafficPolicy: {connectionPool: {tcp: {maxConnections: 1}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bank, namespace: bank, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  host: api.bank.example
  trafficPolicy: {tls: {mode: SIMPLE}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: fallback, namespace: istio-system}
spec:
  host: "*.example"
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop-private, namespace: shop}
spec:
  hosts: [shop.example]
  gateways: [istio-system/public]
  exportTo: ["."]
  http: [{route: [{destination: {host: api.shop.example}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: public, namespace: shop}
spec:
  hosts: [www.example]
  gateways: [istio-system/public]
  http: [{route: [{destination: {host: api.shop.example}}]}]
`

// TestScopedPushContext checks what proxies of different namespaces see of
// one config: a tenant's host "*" rule only in its own namespace, the
// service namespace's rule, the root namespace's as fallback, a private
// ServiceEntry and a private VirtualService only in theirs.
func TestScopedPushContext(t *testing.T) {
	ps := NewPushContext(parseStore(t, scopeInput))
	rule := func(p *PushContext, host string) string {
		if dr := p.DestinationRuleForHost(host); dr != nil {
			return dr.Namespace + "/" + dr.Name
		}
		return ""
	}
	edge := ps.ForProxy(&Proxy{Namespace: "edge"})
	evil := ps.ForProxy(&Proxy{Namespace: "evil"})
	shop := ps.ForProxy(&Proxy{Namespace: "shop"})
	root := ps.ForProxy(&Proxy{Namespace: "istio-system"})
	if edge != ps {
		t.Errorf("a namespace nothing names should see the default view (the push context itself)")
	}
	for _, tc := range []struct {
		name string
		p    *PushContext
		host string
		want string
	}{
		{"own namespace's rule for its service", edge, "api.bank.example", "bank/bank"},
		{"root namespace's rule as fallback", edge, "api.shop.example", "istio-system/fallback"},
		{"tenant's host * for its own proxies", evil, "api.bank.example", "evil/evil"},
		{"service namespace's rule for the root's proxies", root, "api.bank.example", "bank/bank"},
		{"root fallback for the root's proxies", root, "api.shop.example", "istio-system/fallback"},
		{"private service, own namespace", shop, "private.shop.example", "istio-system/fallback"},
		{"private service, another namespace", edge, "private.shop.example", ""},
	} {
		if got := rule(tc.p, tc.host); got != tc.want {
			t.Errorf("%s: rule for %s = %q, want %q", tc.name, tc.host, got, tc.want)
		}
	}
	if slices.ContainsFunc(edge.Services(), func(s *Service) bool { return s.Hostname == "private.shop.example" }) ||
		!slices.ContainsFunc(shop.Services(), func(s *Service) bool { return s.Hostname == "private.shop.example" }) {
		t.Error("a ServiceEntry exported to \".\" must be seen by its own namespace only")
	}
	hosts := func(p *PushContext) (out []string) {
		for _, vs := range p.VirtualServicesForGateway("istio-system/public") {
			out = append(out, vs.Name)
		}
		return out
	}
	if got := hosts(edge); !slices.Equal(got, []string{"public"}) {
		t.Errorf("edge proxy VirtualServices = %v, want [public]", got)
	}
	if got := hosts(shop); !slices.Equal(got, []string{"public", "shop-private"}) {
		t.Errorf("shop proxy VirtualServices = %v, want [public shop-private] (oldest first, then by name)", got)
	}
	if len(ps.VirtualServicesBoundTo("istio-system/public")) != 2 {
		t.Error("VirtualServicesBoundTo must list every bound VirtualService")
	}
	var warned bool
	for _, e := range ps.Errors {
		if e.Key.Name == "evil" && e.Warning && strings.Contains(e.Message, "namespaces bank, shop") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("the evil rule matching other namespaces' services is not reported: %v", ps.Errors)
	}
	if ps.ViewKey(&Proxy{Namespace: "edge"}) != "" || ps.ViewKey(&Proxy{Namespace: "evil"}) != "evil" || ps.ViewKey(&Proxy{Namespace: "shop"}) != "shop" {
		t.Error("view keys: edge shares the default view, evil and shop have their own")
	}
}

// TestExportToDefaults: a mesh default of "." makes objects without
// exportTo private, as istiod's defaultDestinationRuleExportTo.
func TestExportToDefaults(t *testing.T) {
	store := listStore{
		testRule("bank", "bank", "api.bank.example", nil, "v1"),
	}
	reg := staticRegistry{{Hostname: "api.bank.example", Namespace: "bank", Ports: []Port{{Number: 80, Protocol: "HTTP"}}}}
	ps := NewScopedPushContext(Scoping{DefaultDestinationRuleExportTo: []string{"."}}, store, reg)
	if ps.DestinationRuleForHost("api.bank.example") != nil {
		t.Error("a private-by-default rule reached another namespace")
	}
	if ps.ForProxy(&Proxy{Namespace: "bank"}).DestinationRuleForHost("api.bank.example") == nil {
		t.Error("a private-by-default rule missed its own namespace")
	}
}

// A catch-all rule's warning names the first namespaces it does not
// govern and counts the rest, its own namespace left out.
func TestForeignRuleWarningCounts(t *testing.T) {
	var reg staticRegistry
	for _, ns := range []string{"a", "b", "c", "d", "e", "x"} {
		reg = append(reg, &Service{Hostname: "svc." + ns + ".svc.cluster.local", Namespace: ns})
	}
	ps := NewPushContext(listStore{testRule("x", "all", "*", nil)}, reg)
	if len(ps.Errors) != 1 || !strings.Contains(ps.Errors[0].Message, "namespaces a, b, c and 2 more") {
		t.Errorf("errors %v: want one naming a, b, c and 2 more", ps.Errors)
	}
}
