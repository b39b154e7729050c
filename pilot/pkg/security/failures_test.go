package security

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestFailuresLogOncePerPeerAndCountEvery(t *testing.T) {
	var buf bytes.Buffer
	reg := prometheus.NewRegistry()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
	f := NewFailures(reg, slog.New(slog.NewTextHandler(&buf, nil)), clk)
	for port := range 5 {
		f.Record(fmt.Sprintf("10.0.0.1:%d", 40000+port), ReasonNoCredential, "no credential")
	}
	f.Record("10.0.0.2:1", ReasonNoCredential, "no credential")
	f.Record("10.0.0.1:2", ReasonInvalidToken, "token refused")
	f.Record("10.0.0.3:1", "made-up", "x")
	if n := strings.Count(buf.String(), "ADS client refused"); n != 4 {
		t.Errorf("logged %d lines, want 4 (one per peer and reason):\n%s", n, &buf)
	}
	if got := counterValue(t, f, ReasonNoCredential); got != 6 {
		t.Errorf("no_credential = %v, want 6 (every refusal counted)", got)
	}
	if got := counterValue(t, f, ReasonInvalidToken); got != 2 {
		t.Errorf("invalid_token = %v, want 2 (an unknown reason counts as invalid_token)", got)
	}
	if n := seriesCount(t, reg); n != len(reasons) {
		t.Errorf("%d series, want the fixed %d", n, len(reasons))
	}
	// Logged again after the interval.
	clk.SetTime(clk.Now().Add(logInterval))
	f.Record("10.0.0.2:1", ReasonNoCredential, "no credential")
	if n := strings.Count(buf.String(), "ADS client refused"); n != 5 {
		t.Errorf("logged %d lines, want 5 after the interval", n)
	}
	// Bounded memory under a flood of peers.
	for i := range 3 * maxLoggedPeers {
		f.Record(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255), ReasonNoCredential, "no credential")
	}
	if n := len(f.logged); n > maxLoggedPeers {
		t.Errorf("dedup holds %d peers, bound %d", n, maxLoggedPeers)
	}
	var nilF *Failures
	nilF.Record("x", ReasonNoCredential, "nil is a no-op")
}

func counterValue(t *testing.T, f *Failures, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := f.counter.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func seriesCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() == "wayfinder_xds_auth_failures_total" {
			n += len(mf.GetMetric())
		}
	}
	return n
}
