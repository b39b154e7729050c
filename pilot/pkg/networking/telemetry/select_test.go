package telemetry

import (
	"testing"
	"time"

	telemetryv1 "istio.io/api/telemetry/v1"
)

// istiod's sortConfigByCreationTime breaks ties by name, then namespace.
func TestSortByCreationBreaksTiesByNameThenNamespace(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := []Telemetry{
		{Name: "b", Namespace: "x", CreationTime: at},
		{Name: "a", Namespace: "y", CreationTime: at},
		{Name: "a", Namespace: "x", CreationTime: at},
		{Name: "z", Namespace: "x", CreationTime: at.Add(-time.Second)},
	}
	var got []string
	for _, tel := range sortByCreation(in) {
		got = append(got, tel.Namespace+"/"+tel.Name)
	}
	want := []string{"x/z", "x/a", "y/a", "x/b"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

// The oldest namespace-wide Telemetry of a namespace applies, even when a
// newer one sorts first by name.
func TestOldestNamespaceWideWins(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Build(Input{
		Proxy: Proxy{Namespace: "gw"},
		Telemetries: []Telemetry{
			{Name: "a-newer", Namespace: "gw", CreationTime: at.Add(time.Hour), Spec: &telemetryv1.Telemetry{}},
			{Name: "z-older", Namespace: "gw", CreationTime: at, Spec: &telemetryv1.Telemetry{}},
			{Name: "nil-spec", Namespace: "gw", CreationTime: at.Add(-time.Hour)},
		},
	})
	if r.Decision.Namespace != "gw/z-older" {
		t.Errorf("namespace level %q, want gw/z-older", r.Decision.Namespace)
	}
}

// A nil mesh config is istiod's defaults: tracing on without a tracer,
// no access log.
func TestNilMeshIsIstiodDefaults(t *testing.T) {
	r := Build(Input{Proxy: Proxy{Namespace: "istio-system"}})
	if r.Tracing == nil || r.Tracing.GetProvider() != nil || len(r.HTTPAccessLogs) != 0 || r.RequestIDExtension == nil {
		t.Errorf("got tracing %v, access logs %v, request ID %v", r.Tracing, r.HTTPAccessLogs, r.RequestIDExtension)
	}
}
