package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// The Kubernetes-mode bench at a tiny size, end to end: a real etcd and
// kube-apiserver, the real pilot-discovery in Kubernetes mode, 3 gateways,
// and 5 s of endpoint churn at 10/s. Every figure must be there and sane:
// all gateways converged, every change reached every gateway and has a
// latency from each, no errors or NACKs.
func TestKubeBenchTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and pilot-discovery")
	}
	bins, err := apiserver.FindBinaries(apiserver.Binaries{})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping Kubernetes-mode bench: %v", err)
	}
	bin, err := serverenv.BuildBinary(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := options{out: out, pilot: bin, timeout: 2 * time.Minute}
	ko := kubeOptions{rates: []float64{10}, duration: 5 * time.Second, drain: 30 * time.Second}
	c := benchCase{Services: 10, Gateways: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	r := runKubeCase(ctx, o, ko, bins, c, true, false)
	if r.Error != "" {
		t.Fatalf("run failed: %s (logs in %s)", r.Error, out)
	}
	if r.Cold == nil || r.Cold.Converged != c.Gateways {
		t.Fatalf("cold convergence %+v, want all %d gateways", r.Cold, c.Gateways)
	}
	if r.Objects != 41 || r.CreateSeconds <= 0 {
		t.Errorf("created %d objects in %.2fs, want 41 in a positive time", r.Objects, r.CreateSeconds)
	}
	if r.SyncSeconds <= 0 || r.FirstPushSeconds < r.SyncSeconds {
		t.Errorf("informer sync %.3fs, first push %.3fs: want sync > 0 and first push after it", r.SyncSeconds, r.FirstPushSeconds)
	}
	if r.PeakRSSBytes <= 0 || r.CPUSeconds <= 0 {
		t.Errorf("server usage %+v, want positive peak RSS and CPU", r.usage)
	}
	if r.Report.Errors != 0 || r.Report.NACKs != 0 {
		t.Errorf("load errors %d (%v), NACKs %d (%v)", r.Report.Errors, r.Report.ErrorSamples, r.Report.NACKs, r.Report.NACKSamples)
	}
	if len(r.Churn) != 1 {
		t.Fatalf("churn phases = %d, want 1", len(r.Churn))
	}
	ch := r.Churn[0]
	// 10/s for 5 s issues 50 changes; the phase ends on the clock, so a
	// starved issuer may fall behind, but not by half.
	if ch.Changes < 25 || ch.Changes > 50 {
		t.Errorf("changes = %d, want 25 to 50", ch.Changes)
	}
	if ch.Failed != 0 || len(ch.Errors) != 0 {
		t.Errorf("failed writes %d: %v", ch.Failed, ch.Errors)
	}
	if ch.Complete != ch.Changes {
		t.Errorf("%d of %d changes reached every gateway", ch.Complete, ch.Changes)
	}
	if ch.Acks != int64(ch.Changes*c.Gateways) {
		t.Errorf("latencies recorded = %d, want one per change and gateway (%d)", ch.Acks, ch.Changes*c.Gateways)
	}
	if !(ch.AllP50Ms > 0 && ch.AllP50Ms <= ch.AllP99Ms && ch.AllP99Ms <= ch.AllMaxMs) || ch.AckP99Ms <= 0 || ch.WriteP99Ms <= 0 {
		t.Errorf("latencies not ordered or missing: %+v", ch)
	}
	if ch.AnsweredP99Ms > ch.AllP99Ms {
		t.Errorf("p99 from the API's answer %.1fms exceeds p99 from the write's start %.1fms", ch.AnsweredP99Ms, ch.AllP99Ms)
	}
	if ch.CPUSeconds <= 0 || ch.CPUPerChangeMs <= 0 || ch.RSSStartBytes <= 0 || ch.RSSEndBytes <= 0 || ch.HeapStartBytes <= 0 || ch.HeapEndBytes <= 0 {
		t.Errorf("server usage over the churn missing: %+v", ch)
	}
	// A 5-s phase is read a tenth in, and every second.
	if ch.WarmSeconds != 0.5 || ch.RSSWarmBytes <= 0 || ch.RSSMaxBytes < max(ch.RSSWarmBytes, ch.RSSEndBytes) {
		t.Errorf("RSS samples: warm-up %gs, %d bytes then, max %d, end %d", ch.WarmSeconds, ch.RSSWarmBytes, ch.RSSMaxBytes, ch.RSSEndBytes)
	}

	md := kubeMarkdown(machineInfo("test", "abc1234", "1.00 0.50 0.25", time.Now()), ko, nil, []kubeResult{r})
	t.Log(md)
	for _, want := range []string{"| 10 x 3 | pilot | 41 in", "## Endpoint churn", "| 10 x 3 | 10/s | ", "commit abc1234", "Load average at the start (1, 5, 15 min): 1.00 0.50 0.25.", "RSS start -> warm -> end", "RSS is also read every second: the middle figure is 500ms into the phase"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}
