package load

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(ds, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	// With 10 values, p99 is the largest and p50 the fifth.
	if got := Percentile(ds[:10], 99); got != 10*time.Millisecond {
		t.Errorf("p99 of 10 = %v", got)
	}
	if got := Percentile(ds[:10], 50); got != 5*time.Millisecond {
		t.Errorf("p50 of 10 = %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("empty = %v", got)
	}
}

func TestSummarizeSkipsUnconverged(t *testing.T) {
	l := summarize([]time.Duration{-1, 3 * time.Millisecond, time.Millisecond, 2500 * time.Microsecond})
	want := Latency{Converged: 3, Total: 4, P50Ms: 2.5, P99Ms: 3, MaxMs: 3}
	if l != want {
		t.Fatalf("got %+v, want %+v", l, want)
	}
	if l := summarize([]time.Duration{-1}); l != (Latency{Total: 1}) {
		t.Fatalf("nothing converged: %+v", l)
	}
}

func TestSummarizeBytes(t *testing.T) {
	if b := summarizeBytes([]int64{10, 20, 31}); b.Mean != 20 || b.Max != 31 {
		t.Fatalf("got %+v", b)
	}
	if b := summarizeBytes(nil); b != (Bytes{}) {
		t.Fatalf("empty: %+v", b)
	}
}
