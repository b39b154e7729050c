package grpc_test

import (
	"math"
	"testing"
)

// splitVS sends weightV1 percent of echo's traffic to subset v1, the rest
// to v2.
func splitVS(weightV1 int) string {
	return echoVSHead + `  - route:
    - destination:
        host: echo
        subset: v1
      weight: ` + itoa(weightV1) + `
    - destination:
        host: echo
        subset: v2
      weight: ` + itoa(100-weightV1) + `
`
}

// TestWeightedSplit sends 2,000 RPCs through an 80/20 split. Each RPC picks
// a cluster independently, so the v1 count is Binomial(2000, 0.8): standard
// deviation sqrt(2000*0.8*0.2) = 17.9 RPCs (0.89%). The tolerance of ±4%
// (80 RPCs) is 4.47 standard deviations: a correct split fails it with
// probability below 1e-5, while a 75/25 or 85/15 split fails it almost
// surely.
func TestWeightedSplit(t *testing.T) {
	a := startBackend(t, "a", map[string]string{"version": "v1"})
	b := startBackend(t, "b", map[string]string{"version": "v2"})
	e := newEnv(t, map[string]string{
		"se.yaml": serviceEntry(a, b),
		"dr.yaml": subsetsRule("v1", "v2"),
		"vs.yaml": splitVS(80),
	})
	_, c := e.client("split")

	const n = 2000
	counts := map[string]int{}
	for range n {
		name, err := call(c)
		if err != nil {
			t.Fatalf("RPC failed: %v", err)
		}
		counts[name]++
	}
	share := float64(counts["a"]) / n
	t.Logf("80/20 split over %d RPCs: a(v1)=%d (%.2f%%) b(v2)=%d (%.2f%%)", n, counts["a"], 100*share, counts["b"], 100*float64(counts["b"])/n)
	if counts["a"]+counts["b"] != n {
		t.Errorf("answers from unexpected backends: %v", counts)
	}
	sd := math.Sqrt(n*0.8*0.2) / n
	if math.Abs(share-0.8) > 0.04 {
		t.Errorf("v1 share %.4f is outside 0.80±0.04 (%.1f standard deviations of %.4f)", share, math.Abs(share-0.8)/sd, sd)
	}
}
