package model

import (
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// EnvoyFilters come in istiod's order (initEnvoyFilters): priority, then
// creation time, then "name.namespace".
func TestEnvoyFiltersOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ef := func(ns, name string, prio int32, created time.Time) config.Config {
		return config.Config{Meta: config.Meta{Kind: schema.EnvoyFilter, Namespace: ns, Name: name, CreationTimestamp: created},
			Spec: &networking.EnvoyFilter{Priority: prio}}
	}
	store := listStore{
		ef("b", "late", 0, t0.Add(time.Hour)),
		ef("a", "x", 0, t0),
		ef("istio-system", "first", -5, t0.Add(2*time.Hour)),
		ef("a", "x-last", 10, t0),
		ef("b", "x", 0, t0), // same time as a/x: "x.a" < "x.b"
		ef("a", "w", 0, t0), // "w.a" first of the three at t0
	}
	ps := NewPushContext(store)
	var got []string
	for _, c := range ps.EnvoyFilters() {
		got = append(got, c.Namespace+"/"+c.Name)
	}
	want := []string{"istio-system/first", "a/w", "a/x", "b/x", "b/late", "a/x-last"}
	// A routing-only push context keeps them.
	if r := ps.WithRouting(store); len(r.EnvoyFilters()) != len(want) {
		t.Errorf("WithRouting dropped EnvoyFilters: %d", len(r.EnvoyFilters()))
	}
	if len(got) != len(want) {
		t.Fatalf("EnvoyFilters() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("EnvoyFilters() = %v, want %v", got, want)
		}
	}
}
