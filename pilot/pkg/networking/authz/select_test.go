package authz

import (
	"slices"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
)

// TestSelectPolicies follows istiod's ListAuthorizationPolicies: the root
// namespace's policies apply to a workload of any namespace whose labels
// they select (all of them without selector), then the proxy's own
// namespace's; each namespace in creation order, then by name.
func TestSelectPolicies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(ns, name string, age int, spec string) Policy {
		p := policy(t, spec)
		p.Namespace, p.Name, p.CreationTime = ns, name, t0.Add(time.Duration(age)*time.Hour)
		return p
	}
	policies := []Policy{
		mk("foo", "b-new", 3, `{}`),
		mk("foo", "a-old", 1, `{"action":"DENY"}`),
		mk("foo", "z-same-time", 1, `{}`),
		mk("istio-system", "root-all", 5, `{"action":"AUDIT"}`),
		mk("istio-system", "root-selects", 4, `{"selector":{"matchLabels":{"istio":"ingressgateway"}}}`),
		mk("istio-system", "root-other", 0, `{"selector":{"matchLabels":{"istio":"egressgateway"}}}`),
		mk("foo", "other-labels", 0, `{"selector":{"matchLabels":{"app":"x"}}}`),
		mk("foo", "target-ref", 0, `{"targetRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw"}]}`),
		mk("bar", "other-namespace", 0, `{}`),
	}
	proxy := policyattach.Proxy{Namespace: "foo", Labels: map[string]string{"istio": "ingressgateway"}}
	got := selectPolicies(policies, "istio-system", proxy)
	var names []string
	for _, p := range got.all {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	want := []string{"istio-system/root-selects", "istio-system/root-all", "foo/a-old", "foo/z-same-time", "foo/b-new"}
	if !slices.Equal(names, want) {
		t.Errorf("selected %v, want %v", names, want)
	}
	if len(got.allow) != 3 || len(got.deny) != 1 || len(got.audit) != 1 {
		t.Errorf("by action: %d allow, %d deny, %d audit", len(got.allow), len(got.deny), len(got.audit))
	}
	// Build reports them in that order too.
	r := Build(Input{Policies: policies, Proxy: proxy})
	var applied []string
	for _, k := range r.Applied {
		applied = append(applied, k.Namespace+"/"+k.Name)
	}
	if !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
}
