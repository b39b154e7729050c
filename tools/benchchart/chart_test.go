package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// input is tools/bench's sample results as it writes them; its
// TestChartInput keeps the file in step with its JSON.
const input = "testdata/results.json"

func TestDecodeResults(t *testing.T) {
	f, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	results, err := decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 {
		t.Fatalf("%d results, want 6", len(results))
	}
	r := results[0]
	if r.Case.Services != 1000 || r.Case.Gateways != 500 || r.Server != "pilot" || r.PeakRSSBytes != 300<<20 || r.CPUSeconds != 3 ||
		r.Report == nil || r.Report.Cold != (latency{Converged: 500, Total: 500, P99Ms: 2500}) ||
		r.Report.Update == nil || *r.Report.Update != (latency{Converged: 500, Total: 500, P99Ms: 800}) {
		t.Errorf("first result decoded as %+v (report %+v)", r, r.Report)
	}
	if r := results[1]; r.Server != "floor" || !isFloor(r.Server) || r.CPUSeconds != 1.25 {
		t.Errorf("second result decoded as %+v", r)
	}
	if r := results[5]; r.Case.Services != 5000 || r.Report != nil {
		t.Errorf("the failed case decoded as %+v, want no report", r)
	}
}

func TestRunDrawsChart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.png")
	if err := run([]string{"-in", input, "-out", out}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
		t.Fatalf("chart is %v", b)
	}
}

func TestRunReadsStdin(t *testing.T) {
	in, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out := filepath.Join(t.TempDir(), "results.png")
	if err := run([]string{"-in", "-", "-out", out}, in); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}
