package workload

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestMarkerAddressRoundTrip(t *testing.T) {
	for _, k := range []int{0, 1, 255, 256, 65535, 65536, 1 << 20, maxMarker - 1} {
		addr := MarkerAddress(k)
		got, ok := MarkerID(addr)
		if !ok || got != k {
			t.Errorf("MarkerID(MarkerAddress(%d) = %s) = %d, %v", k, addr, got, ok)
		}
	}
	// The scenario's own endpoints and anything else are not markers.
	for _, addr := range []string{KubeEndpointAddress(0, 0, 3), KubeEndpointAddress(5000, 2, 3), "127.64.0.1", "10.64.0", "10.64.0.256", "10.x.0.1", ""} {
		if k, ok := MarkerID(addr); ok {
			t.Errorf("MarkerID(%q) = %d, want no marker", addr, k)
		}
	}
}

func TestKubeEndpointSliceMarksEndpointZero(t *testing.T) {
	es := KubeEndpointSlice(7, 3, 42)
	if es.Labels[discoveryv1.LabelServiceName] != "svc-7" || es.Namespace != ServiceNamespace || len(es.Endpoints) != 3 {
		t.Fatalf("slice %s/%s labels %v with %d endpoints", es.Namespace, es.Name, es.Labels, len(es.Endpoints))
	}
	if got := es.Endpoints[0].Addresses[0]; got != MarkerAddress(42) {
		t.Errorf("endpoint 0 = %s, want marker %s", got, MarkerAddress(42))
	}
	if got := es.Endpoints[1].Addresses[0]; got != KubeEndpointAddress(7, 1, 3) {
		t.Errorf("endpoint 1 = %s, want %s", got, KubeEndpointAddress(7, 1, 3))
	}
	if got := KubeEndpointSlice(7, 3, -1).Endpoints[0].Addresses[0]; got != KubeEndpointAddress(7, 0, 3) {
		t.Errorf("unmarked endpoint 0 = %s", got)
	}
}
