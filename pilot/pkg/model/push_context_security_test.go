package model

import (
	"slices"
	"testing"
	"time"

	security "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// TestPushContextSecurityPolicies: the push context lists every
// RequestAuthentication and AuthorizationPolicy of the store, oldest
// first, then by namespace and name, whichever API version (v1, v1beta1)
// it was written in; a routing-only push context keeps them.
func TestPushContextSecurityPolicies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ap := func(ns, name string, created time.Time) config.Config {
		return config.Config{Meta: config.Meta{Kind: schema.AuthorizationPolicy, Namespace: ns, Name: name, CreationTimestamp: created},
			Spec: &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY, Rules: []*security.Rule{{}}}}
	}
	store := listStore{
		ap("edge", "b", t0.Add(time.Hour)),
		ap("istio-system", "root", t0),
		ap("edge", "a", t0.Add(time.Hour)),
		ap("apps", "z", t0.Add(time.Hour)),
	}
	store = append(store, parseStore(t, `
apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata: {name: old-api, namespace: edge, creationTimestamp: "2025-06-01T00:00:00Z", annotations: {istio.io/dry-run: "true"}}
spec:
  action: ALLOW
  rules: [{from: [{source: {ipBlocks: [10.0.0.0/8]}}]}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: edge, creationTimestamp: "2025-07-01T00:00:00Z"}
spec:
  jwtRules: [{issuer: https://issuer.example}]
---
apiVersion: security.istio.io/v1beta1
kind: RequestAuthentication
metadata: {name: jwt-old, namespace: edge, creationTimestamp: "2025-06-01T00:00:00Z"}
spec:
  jwtRules: [{issuer: https://old.example}]
`)...)

	ps := NewPushContext(store)
	keys := func(cs []config.Config) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Namespace+"/"+c.Name)
		}
		return out
	}
	wantAP := []string{"edge/old-api", "istio-system/root", "apps/z", "edge/a", "edge/b"}
	if got := keys(ps.AuthorizationPolicies()); !slices.Equal(got, wantAP) {
		t.Fatalf("AuthorizationPolicies() = %v, want %v", got, wantAP)
	}
	first := ps.AuthorizationPolicies()[0]
	if spec, ok := first.Spec.(*security.AuthorizationPolicy); !ok || spec.GetRules()[0].GetFrom()[0].GetSource().GetIpBlocks()[0] != "10.0.0.0/8" ||
		first.Annotations["istio.io/dry-run"] != "true" {
		t.Errorf("%s = %v %v", first.Key(), first.Annotations, first.Spec)
	}
	wantRA := []string{"edge/jwt-old", "edge/jwt"}
	if got := keys(ps.RequestAuthentications()); !slices.Equal(got, wantRA) {
		t.Fatalf("RequestAuthentications() = %v, want %v", got, wantRA)
	}
	if spec, ok := ps.RequestAuthentications()[1].Spec.(*security.RequestAuthentication); !ok || spec.GetJwtRules()[0].GetIssuer() != "https://issuer.example" {
		t.Errorf("RequestAuthentication spec = %v", ps.RequestAuthentications()[1].Spec)
	}

	r := ps.WithRouting(store)
	if len(r.AuthorizationPolicies()) != len(wantAP) || len(r.RequestAuthentications()) != len(wantRA) {
		t.Errorf("WithRouting dropped security policies: %d %d", len(r.AuthorizationPolicies()), len(r.RequestAuthentications()))
	}
	if e := NewPushContext(listStore{}); len(e.AuthorizationPolicies())+len(e.RequestAuthentications()) != 0 {
		t.Error("an empty store has security policies")
	}
}
