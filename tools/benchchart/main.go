// Command benchchart draws the benchmark's chart (results.png): cost
// against services, one line per server and gateway count, in four panels
// (CPU seconds, peak RSS, cold and update convergence p99). It reads the
// results file tools/bench writes (results.json, or the same JSON on
// stdin with -in -); tools/bench runs it after every matrix and for
// --chart-only.
//
// It is its own module so that the plotting library and what it needs
// stay out of the main module's go.mod: nothing in the control plane draws.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// result is the part of one tools/bench result the chart reads, with its
// JSON names (testdata/results.json, kept in step by tools/bench's
// TestChartInput, is what this package's tests decode).
type result struct {
	Case struct {
		Services int `json:"services"`
		Gateways int `json:"gateways"`
	} `json:"case"`
	Server       string  `json:"server"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	Report       *struct {
		Cold   latency  `json:"cold"`
		Update *latency `json:"update"`
	} `json:"report"`
}

// latency is a load report's convergence summary.
type latency struct {
	Converged int     `json:"converged"`
	Total     int     `json:"total"`
	P99Ms     float64 `json:"p99_ms"`
}

func main() {
	if err := run(os.Args[1:], os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("benchchart", flag.ContinueOnError)
	in := fs.String("in", "", `the bench's results file (results.json); "-" reads stdin`)
	out := fs.String("out", "", "PNG to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		return errors.New("usage: benchchart -in results.json -out results.png")
	}
	r := stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	results, err := decode(r)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	return writeChart(*out, results)
}

// decode reads a results file's results.
func decode(r io.Reader) ([]result, error) {
	var file struct {
		Results []result `json:"results"`
	}
	if err := json.NewDecoder(r).Decode(&file); err != nil {
		return nil, err
	}
	return file.Results, nil
}
