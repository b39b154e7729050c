package model

import (
	"testing"
	"time"

	telemetry "istio.io/api/telemetry/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func telemetryConfig(ns, name string, created time.Time) config.Config {
	return config.Config{
		Meta: config.Meta{Kind: schema.Telemetry, Namespace: ns, Name: name, CreationTimestamp: created},
		Spec: &telemetry.Telemetry{AccessLogging: []*telemetry.AccessLogging{{Providers: []*telemetry.ProviderRef{{Name: "envoy"}}}}},
	}
}

// TestPushContextTelemetries: the push context lists every Telemetry of
// the store, oldest first, then by namespace and name, whichever API
// version it was written in; a routing-only push context keeps them.
func TestPushContextTelemetries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store := listStore{
		telemetryConfig("edge", "b", t0.Add(time.Hour)),
		telemetryConfig("istio-system", "mesh-default", t0),
		telemetryConfig("edge", "a", t0.Add(time.Hour)),
		telemetryConfig("apps", "z", t0.Add(time.Hour)),
	}
	parsed := parseStore(t, `
apiVersion: telemetry.istio.io/v1alpha1
kind: Telemetry
metadata: {name: old-api, namespace: edge, creationTimestamp: "2025-06-01T00:00:00Z"}
spec:
  tracing: [{randomSamplingPercentage: 5}]
`)
	store = append(store, parsed...)

	ps := NewPushContext(store)
	var got []string
	for _, c := range ps.Telemetries() {
		got = append(got, c.Namespace+"/"+c.Name)
	}
	want := []string{"edge/old-api", "istio-system/mesh-default", "apps/z", "edge/a", "edge/b"}
	if len(got) != len(want) {
		t.Fatalf("Telemetries() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Telemetries() = %v, want %v", got, want)
		}
	}
	first := ps.Telemetries()[0]
	if spec, ok := first.Spec.(*telemetry.Telemetry); !ok || spec.GetTracing()[0].GetRandomSamplingPercentage().GetValue() != 5 {
		t.Errorf("spec of %s = %v", first.Key(), first.Spec)
	}
	if !first.CreationTimestamp.Equal(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("creation time of %s = %v", first.Key(), first.CreationTimestamp)
	}

	if r := ps.WithRouting(store); len(r.Telemetries()) != len(want) {
		t.Errorf("WithRouting dropped Telemetries: %d", len(r.Telemetries()))
	}
	if len(NewPushContext(listStore{}).Telemetries()) != 0 {
		t.Error("an empty store has Telemetries")
	}
}
