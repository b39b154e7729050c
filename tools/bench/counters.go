package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Metrics read from pilot-discovery's /metrics.
const (
	translationsMetric = "wayfinder_translations_total"
	pushCountMetric    = "wayfinder_push_duration_seconds_count"
	pushSumMetric      = "wayfinder_push_duration_seconds_sum"
)

// counters are pilot-discovery's own figures over one phase of a run.
type counters struct {
	// Translations are wayfinder_translations_total's increase, by what
	// (services, gateway, gateway-warm, endpoints...): a gateway
	// configuration that 500 proxies share is translated once, not 500
	// times.
	Translations map[string]float64 `json:"translations,omitempty"`
	// Pushes and PushSeconds are the pushes computed and the seconds
	// spent computing them (wayfinder_push_duration_seconds).
	Pushes      float64 `json:"pushes"`
	PushSeconds float64 `json:"push_seconds"`
	// HeapInuseBytes is the Go heap in use at the phase's end.
	HeapInuseBytes int64 `json:"heap_inuse_bytes"`
}

// serverCounters split a pilot-discovery run at the bench's marks: its
// start to ready (no gateway connected: the first push and the gateway
// warm-up), ready to cold convergence (every gateway connected and
// served) and from there to the end of the update.
type serverCounters struct {
	Ready  *counters `json:"ready,omitempty"`
	Cold   *counters `json:"cold,omitempty"`
	Update *counters `json:"update,omitempty"`
}

// scrapeMetrics reads a Prometheus text exposition into sample ->
// value, the sample named as exposed (name{labels}).
func scrapeMetrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(bufio.NewScanner(resp.Body))
}

func parseMetrics(s *bufio.Scanner) (map[string]float64, error) {
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	out := map[string]float64{}
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, s.Err()
}

// countersAt picks the bench's figures out of a scrape: cumulative
// values, heap at the moment.
func countersAt(m map[string]float64) counters {
	c := counters{Translations: map[string]float64{}, Pushes: m[pushCountMetric], PushSeconds: m[pushSumMetric],
		HeapInuseBytes: int64(m[heapMetric])}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, translationsMetric+`{what="`)
		if !ok {
			continue
		}
		if what, ok := strings.CutSuffix(rest, `"}`); ok {
			c.Translations[what] = v
		}
	}
	return c
}

// since is c's increase over earlier, with c's heap.
func (c counters) since(earlier counters) *counters {
	d := &counters{Translations: map[string]float64{}, Pushes: c.Pushes - earlier.Pushes,
		PushSeconds: c.PushSeconds - earlier.PushSeconds, HeapInuseBytes: c.HeapInuseBytes}
	for what, v := range c.Translations {
		if n := v - earlier.Translations[what]; n != 0 {
			d.Translations[what] = n
		}
	}
	return d
}

// counterMarks scrapes a server at each mark of a run; a failed scrape
// leaves its phases out (the run's other figures stand).
type counterMarks struct {
	url                    string
	ready, cold, end       counters
	okReady, okCold, okEnd bool
}

func (m *counterMarks) mark(ctx context.Context, dst *counters, ok *bool) {
	if v, err := scrapeMetrics(ctx, m.url); err == nil {
		*dst, *ok = countersAt(v), true
	}
}

// result folds the marks into the run's serverCounters; nil when the
// server was not scraped.
func (m *counterMarks) result() *serverCounters {
	if !m.okReady {
		return nil
	}
	ready := m.ready.since(counters{})
	out := &serverCounters{Ready: ready}
	if m.okCold {
		out.Cold = m.cold.since(m.ready)
		if m.okEnd {
			out.Update = m.end.since(m.cold)
		}
	}
	return out
}

// medianCounters folds repeated runs: translation and push counts are
// the most any run made (a run that translated more must show), seconds
// and heap the median.
func medianCounters(runs []result) *serverCounters {
	var with []result
	for _, r := range runs {
		if r.Counters != nil {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return nil
	}
	phase := func(get func(*serverCounters) *counters) *counters {
		var have []result
		for _, r := range with {
			if get(r.Counters) != nil {
				have = append(have, r)
			}
		}
		if len(have) == 0 {
			return nil
		}
		out := &counters{Translations: map[string]float64{}}
		for _, r := range have {
			c := get(r.Counters)
			out.Pushes = max(out.Pushes, c.Pushes)
			for what, n := range c.Translations {
				out.Translations[what] = max(out.Translations[what], n)
			}
		}
		out.PushSeconds = median(have, func(r result) float64 { return get(r.Counters).PushSeconds })
		out.HeapInuseBytes = int64(median(have, func(r result) float64 { return float64(get(r.Counters).HeapInuseBytes) }))
		return out
	}
	return &serverCounters{
		Ready:  phase(func(s *serverCounters) *counters { return s.Ready }),
		Cold:   phase(func(s *serverCounters) *counters { return s.Cold }),
		Update: phase(func(s *serverCounters) *counters { return s.Update }),
	}
}

// translationsCell lists a phase's translations ("gateway 1, services
// 1") and pushes.
func translationsCell(c *counters) string {
	if c == nil {
		return "-"
	}
	var parts []string
	for _, what := range slices.Sorted(maps.Keys(c.Translations)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", what, c.Translations[what]))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	return fmt.Sprintf("%s; %.0f pushes, %.0f ms", strings.Join(parts, ", "), c.Pushes, c.PushSeconds*1000)
}

// countersSection is the Markdown table of the server's counters, for
// the runs that have them.
func countersSection(results []result) string {
	var b strings.Builder
	for _, r := range results {
		if r.Counters == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n## Translations and pushes (the server's counters)\n\n")
			b.WriteString("From pilot-discovery's /metrics at three marks: ready (no gateway connected yet: the first push and the gateway warm-up), cold convergence (every gateway connected and served) and the end of the update. Translations are `wayfinder_translations_total` by what: gateway configurations are translated once per distinct configuration, however many gateways share it. Pushes and their compute time are `wayfinder_push_duration_seconds`. With repeated runs, counts are the most any run made, times and heap the median.\n\n")
			b.WriteString("| case | server | start to ready | ready to cold convergence | update | Go heap in use: ready / converged / end (MB) |\n|---|---|---|---|---|---|\n")
		}
		c := r.Counters
		heap := func(p *counters) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprintf("%.0f", float64(p.HeapInuseBytes)/(1<<20))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s / %s / %s |\n", r.Case.label(), r.Server,
			translationsCell(c.Ready), translationsCell(c.Cold), translationsCell(c.Update), heap(c.Ready), heap(c.Cold), heap(c.Update))
	}
	return b.String()
}
