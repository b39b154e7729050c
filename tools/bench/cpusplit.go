package main

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// benchSettle is the --config-settle pilot-discovery runs with in the
// bench: the workload's writes are atomic renames, so no half-written
// file can be seen and the window only adds latency.
const benchSettle = "1ms"

// cpuSplit divides a server's CPU between its start (config load and
// the first, full translation, before any gateway connects) and the
// one-VirtualService update (from the moment the change is written until
// every gateway has it): issue 14 asks that the update cost under a tenth
// of a full translation. The startup figure includes reading and parsing
// the config, so the ratio is a bound; BenchmarkOneVirtualServiceChange in
// pilot/pkg/xds compares the translations alone.
type cpuSplit struct {
	StartupCPUSeconds float64 `json:"startup_cpu_seconds,omitempty"`
	UpdateCPUSeconds  float64 `json:"update_cpu_seconds,omitempty"`
	atTrigger         float64
}

// started records the CPU the server used until it was ready.
func (c *cpuSplit) started(p *proc) {
	if u, err := p.usage(); err == nil {
		c.StartupCPUSeconds = u.CPUSeconds
	}
}

// around wraps the update trigger to note the server's CPU when the
// change is made.
func (c *cpuSplit) around(p *proc, trigger func(context.Context) error) func(context.Context) error {
	if trigger == nil {
		return nil
	}
	return func(ctx context.Context) error {
		if u, err := p.usage(); err == nil {
			c.atTrigger = u.CPUSeconds
		}
		return trigger(ctx)
	}
}

// finished records the update's CPU from the server's total at the end.
func (c *cpuSplit) finished(total usage) {
	if c.atTrigger > 0 {
		c.UpdateCPUSeconds = total.CPUSeconds - c.atTrigger
	}
}

// medianSplit is the median of each figure over runs.
func medianSplit(runs []result) cpuSplit {
	return cpuSplit{
		StartupCPUSeconds: median(runs, func(r result) float64 { return r.StartupCPUSeconds }),
		UpdateCPUSeconds:  median(runs, func(r result) float64 { return r.UpdateCPUSeconds }),
	}
}

// cpuSection is the Markdown table of the split, printed to stderr too.
func cpuSection(results []result) string {
	var b strings.Builder
	b.WriteString("\n## One-VirtualService change against a full translation (server CPU)\n\n")
	b.WriteString("Full translation: from the server's start to ready (config read and parsed, everything translated and serialized, no gateway connected yet). One-VS change: from writing the changed VirtualService until every gateway holds it (translation, serialization and sending to all gateways). The floor's rows are its load time and the cost of sending the same update with no translation at all.\n\n")
	b.WriteString("| services x gateways | server | one-VS change CPU (s) | full translation CPU (s) | ratio |\n|---|---|---|---|---|\n")
	for _, r := range results {
		if r.StartupCPUSeconds == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %.2f |\n", r.Case.label(), r.Server,
			r.UpdateCPUSeconds, r.StartupCPUSeconds, ratio(r.UpdateCPUSeconds, r.StartupCPUSeconds))
	}
	return b.String()
}

// logSplit prints one result's split beside the other figures.
func logSplit(r result) {
	if r.StartupCPUSeconds > 0 {
		fmt.Fprintf(os.Stderr, "%s %s: one-VS change CPU %.3f s, full translation CPU %.3f s\n", r.Case, r.Server, r.UpdateCPUSeconds, r.StartupCPUSeconds)
	}
}
