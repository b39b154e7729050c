package main

import (
	"context"
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

func TestParseCases(t *testing.T) {
	got, err := parseCases(" 100x100, 1_000x500,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (benchCase{Services: 100, Gateways: 100}) || got[1] != (benchCase{Services: 1000, Gateways: 500}) {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"", "100", "100x", "x5", "0x5", "ax1"} {
		if _, err := parseCases(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	full, err := parseCases(fullMatrix)
	if err != nil || len(full) != 6 {
		t.Fatalf("full matrix: %v %v", full, err)
	}
}

func TestParseProcFiles(t *testing.T) {
	status := "Name:\tpilot-discovery\nVmPeak:\t  900 kB\nVmHWM:\t   77336 kB\nVmRSS:\t 1000 kB\n"
	if got, err := parseVmHWM(status); err != nil || got != 77336<<10 {
		t.Fatalf("VmHWM = %d, %v", got, err)
	}
	if _, err := parseVmHWM("Name: x\n"); err == nil {
		t.Error("missing VmHWM accepted")
	}
	// The command name may contain spaces and parentheses.
	stat := "4242 (pilot (disc) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 0 0"
	if got, err := parseCPUSeconds(stat); err != nil || got != 3.25 {
		t.Fatalf("CPU = %v, %v", got, err)
	}
	if _, err := parseCPUSeconds("4242 (x) S 1 2"); err == nil {
		t.Error("short stat accepted")
	}
	if got := memTotalGB("MemTotal:       24684000 kB\nMemFree: 1 kB\n"); got != 23.5 {
		t.Errorf("memTotalGB = %v", got)
	}
}

func sampleResults() []result {
	rep := func(coldP99, updP99 float64) *load.Report {
		return &load.Report{Gateways: 500,
			Cold:   load.Latency{Converged: 500, Total: 500, P50Ms: coldP99 / 2, P99Ms: coldP99, MaxMs: coldP99},
			Update: &load.Latency{Converged: 500, Total: 500, P50Ms: updP99 / 2, P99Ms: updP99, MaxMs: updP99}}
	}
	c := benchCase{Services: 1000, Gateways: 500}
	return []result{
		{Case: c, Server: "pilot", usage: usage{PeakRSSBytes: 300 << 20, CPUSeconds: 3}, Report: rep(2500, 800)},
		{Case: c, Server: "floor", usage: usage{PeakRSSBytes: 100 << 20, CPUSeconds: 1.25}, Report: rep(2000, 600)},
		{Case: c, Server: "pilot-delta", usage: usage{PeakRSSBytes: 350 << 20, CPUSeconds: 4}, Report: rep(3000, 800)},
		{Case: c, Server: "floor-delta", usage: usage{PeakRSSBytes: 100 << 20, CPUSeconds: 2}, Report: rep(2500, 800)},
		{Case: benchCase{Services: 100, Gateways: 100}, Server: "pilot", usage: usage{PeakRSSBytes: 60 << 20, CPUSeconds: 0.2}, Report: rep(100, 200)},
		{Case: benchCase{Services: 5000, Gateways: 500}, Server: "pilot", Error: "timed out"},
	}
}

func TestMarkdownRatiosAndTargets(t *testing.T) {
	md := markdown(machine{Date: "2026-01-01 00:00 UTC", CPUs: 2, MemoryGB: 23.5, Go: "go1.26", Load: "0.50 0.40 0.30", Note: "shared"}, sampleResults())
	for _, want := range []string{
		"on 2 CPUs", "23.5 GB", "Load average at the start (1, 5, 15 min): 0.50 0.40 0.30.", "Note: shared.",
		"| 1000 x 500 | pilot | 1.25 / 2.50 / 2.50 | 400 / 800 / 800 | 300 | 3.00 |",
		// 2500/2000 cold, 800/600 update, 3/1.25 CPU: within issue 6's
		// targets; all four over issue 14's (RSS 300/100).
		"| 1000 x 500 | pilot | floor | 1.25x | 1.33x | 2.40x | 300 MB | 3.00x | met | missed: cold 1.25x > 1.1x, update 1.33x > 1.1x, CPU 2.40x > 1.5x, RSS 3.00x > 1.5x |",
		// Delta against the delta floor: 3000/2500, 800/800, 4/2, 350/100.
		"| 1000 x 500 | pilot-delta | floor-delta | 1.20x | 1.00x | 2.00x | 350 MB | 3.50x | met | missed: cold 1.20x > 1.1x, CPU 2.00x > 1.5x, RSS 3.50x > 1.5x |",
		"| 100 x 100 | pilot | - | - | - | - | 60 MB | - | missed: update p99 200.00 ms > 150 ms | - |",
		"| 5000 x 500 | pilot | - | - | - | - | 0.00 | - | - | - | timed out |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestVerdictMisses(t *testing.T) {
	r := sampleResults()[0]
	r.PeakRSSBytes = 500 << 20
	q := ratios{cold: 1.6, update: 1.0, cpu: 3.5, rss: 1.4}
	got := verdict(targets, r, q)
	for _, want := range []string{"cold 1.60x > 1.5x", "CPU 3.50x > 3x", "RSS 500.00 MB > 400 MB"} {
		if !strings.Contains(got, want) {
			t.Errorf("verdict %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "update") {
		t.Errorf("verdict %q flags the update, which is within target", got)
	}
	// Issue 14's: a peak RSS of 1.4x the floor's is within 1.5x, and so
	// is the update at 1.0x; cold and CPU are not.
	got = verdict(targets14, r, q)
	if want := "missed: cold 1.60x > 1.1x, CPU 3.50x > 1.5x"; got != want {
		t.Errorf("issue 14 verdict %q, want %q", got, want)
	}
	if got := verdict(targets14, r, ratios{cold: 1.05, update: 1.1, cpu: 1.5, rss: 1.2}); got != "met" {
		t.Errorf("issue 14 verdict at the limits = %q, want met", got)
	}
}

func TestWriteChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := writeChart(path, sampleResults()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() < 600 || b.Dy() < 400 {
		t.Fatalf("chart is %v", b)
	}
	// The chart is drawn by tools/benchchart from these results' JSON:
	// every panel shows the first series (the floor at 500 gateways, in
	// the palette's first colour, blue #1f77b4: its point and its legend
	// entry), so the two agree on the field names.
	blue := func(x, y int) bool {
		r, g, bl, _ := img.At(x, y).RGBA()
		r, g, bl = r>>8, g>>8, bl>>8
		return bl > g && g > r && bl-r > 60
	}
	for q, name := range []string{"CPU seconds", "Peak RSS", "Cold convergence p99", "Update convergence p99"} {
		x0, y0 := b.Min.X+q%2*b.Dx()/2, b.Min.Y+q/2*b.Dy()/2
		n := 0
		for y := y0; y < y0+b.Dy()/2; y++ {
			for x := x0; x < x0+b.Dx()/2; x++ {
				if blue(x, y) {
					n++
				}
			}
		}
		if n < 10 {
			t.Errorf("panel %q has %d pixels of the floor's colour, want its point and legend", name, n)
		}
	}
}

// chartInput is the results file tools/benchchart's tests read: the JSON
// this package writes for sampleResults. When a field's name changes here,
// this test fails until `go test ./tools/bench -run TestChartInput -update`
// rewrites it, and then benchchart's tests fail until it reads the new name.
const chartInput = "../benchchart/testdata/results.json"

var update = flag.Bool("update", false, "rewrite "+chartInput)

func TestChartInput(t *testing.T) {
	got, err := json.MarshalIndent(struct {
		Results []result `json:"results"`
	}{sampleResults()}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(chartInput, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(chartInput)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is not the JSON of sampleResults: run go test ./tools/bench -run TestChartInput -update", chartInput)
	}
}

func TestEarlierResultsKeepsOtherCases(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if got, err := earlierResults(path, nil); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	data, err := json.Marshal(map[string]any{"results": sampleResults()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := earlierResults(path, []benchCase{{Services: 1000, Gateways: 500}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Case != (benchCase{Services: 100, Gateways: 100}) || got[1].Case != (benchCase{Services: 5000, Gateways: 500}) {
		t.Fatalf("kept %+v", got)
	}
	if got[0].Report == nil || got[0].Report.Update.P99Ms != 200 || got[0].PeakRSSBytes != 60<<20 {
		t.Fatalf("result did not round-trip: %+v", got[0])
	}
}

func TestMedianResultOfRuns(t *testing.T) {
	run := func(cold, upd, cpu float64, rss int64, converged int, err string) result {
		r := result{Server: "pilot", usage: usage{PeakRSSBytes: rss, CPUSeconds: cpu}, Error: err,
			Report: &load.Report{Cold: load.Latency{Converged: converged, Total: 500, P99Ms: cold}, Update: &load.Latency{Converged: 500, Total: 500, P99Ms: upd}}}
		return r
	}
	runs := []result{
		run(4000, 2000, 6, 900, 500, ""),
		run(9000, 5000, 8, 1100, 499, ""),
		run(3000, 3000, 7, 1000, 500, ""),
		run(1, 1, 1, 1, 500, "timed out"), // failed: counted out
	}
	m := medianResult(runs)
	if m.Runs != 3 || m.Report.Cold.P99Ms != 4000 || m.Report.Update.P99Ms != 3000 || m.CPUSeconds != 7 || m.PeakRSSBytes != 1000 {
		t.Errorf("median = runs %d cold %v update %v cpu %v rss %v", m.Runs, m.Report.Cold.P99Ms, m.Report.Update.P99Ms, m.CPUSeconds, m.PeakRSSBytes)
	}
	if m.Report.Cold.Converged != 499 {
		t.Errorf("converged = %d, want the fewest any run reached (499)", m.Report.Cold.Converged)
	}
	if runs[0].Report.Cold.P99Ms != 4000 {
		t.Error("the runs' own reports were changed")
	}
	if even := medianResult(runs[:2]); even.Report.Cold.P99Ms != 6500 {
		t.Errorf("median of two = %v, want their mean", even.Report.Cold.P99Ms)
	}
	if failed := medianResult(runs[3:]); failed.Error != "timed out" {
		t.Errorf("all runs failed: error %q", failed.Error)
	}
	if md := markdown(machine{}, []result{m}); !strings.Contains(md, "median of 3 runs") {
		t.Errorf("table does not say the figures are medians:\n%s", md)
	}
}

// The sample a warm-up into the phase is the first at or after it; the
// largest sample is the maximum; no samples give 0.
func TestRSSSamples(t *testing.T) {
	samples := []rssSample{{time.Second, 100}, {2 * time.Second, 180}, {3 * time.Second, 150}}
	if got := rssAt(samples, 1500*time.Millisecond); got != 180 {
		t.Errorf("rssAt 1.5 s = %d, want 180", got)
	}
	if got := rssAt(samples, time.Second); got != 100 {
		t.Errorf("rssAt 1 s = %d, want 100", got)
	}
	if got := rssAt(samples, 4*time.Second); got != 0 {
		t.Errorf("rssAt past the samples = %d, want 0", got)
	}
	if got := rssMax(samples); got != 180 {
		t.Errorf("rssMax = %d, want 180", got)
	}
	if rssAt(nil, 0) != 0 || rssMax(nil) != 0 {
		t.Error("no samples gave a value")
	}
}

// The churn targets are checked at 1,000 x 500: p99 at 200/s and RSS
// growth over each phase, with the growth after the warm-up beside it.
func TestChurnTargets(t *testing.T) {
	r := kubeResult{Server: "pilot-delta", Case: benchCase{Services: 1000, Gateways: 500}, Churn: []churnResult{
		{Rate: 50, Changes: 10, Complete: 10, AllP99Ms: 300, RSSGrowthPct: 40, WarmSeconds: 30, RSSWarmBytes: 1, RSSDriftPct: 2.5},
		{Rate: 200, Changes: 10, Complete: 10, AllP99Ms: 150, AckP99Ms: 120, RSSGrowthPct: -2},
	}}
	got := churnTargets([]kubeResult{r})
	for _, want := range []string{
		"- pilot-delta, 50/s: RSS growth over the phase +40.0%: **not met**",
		"  - from 30s in to the end (not the target's measure; it tells a step at the start from growth that goes on): +2.5%",
		"- pilot-delta, 200/s: every-gateway p99 150 ms, per-ACK p99 120 ms: met",
		"- pilot-delta, 200/s: RSS growth over the phase -2.0%: met",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("targets lack %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "from 30s in") != 1 {
		t.Errorf("a phase without samples got a warm-up line:\n%s", got)
	}
	other := r
	other.Case = benchCase{Services: 10, Gateways: 3}
	if got := churnTargets([]kubeResult{other}); !strings.Contains(got, "not measured in this run") {
		t.Errorf("another case was checked against the targets:\n%s", got)
	}
}

// The ready endpoint may answer before the log line with the same news has
// come through the pipe; wait must return once the line arrives, however
// it is split across writes, and name the line when it never does.
func TestLogWatchWaitsForALineWrittenLater(t *testing.T) {
	w := newLogWatch("first push")
	done := make(chan error, 1)
	go func() { done <- w.wait(context.Background(), "first push") }()
	time.Sleep(20 * time.Millisecond)
	if _, err := w.Write([]byte(`{"msg":"first `)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("wait returned %v before the line was complete", err)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := w.Write([]byte("push\"}\n")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
	if w.at("first push") <= 0 {
		t.Errorf("at = %v, want the time the line was seen", w.at("first push"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := newLogWatch("never").wait(ctx, "never")
	if err == nil || !strings.Contains(err.Error(), `"never"`) {
		t.Errorf("wait for a line never written = %v, want an error naming it", err)
	}
}
