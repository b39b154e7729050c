package main

import (
	"fmt"
	"strings"
)

// target is the goal for a case, relative to the floor.
type target struct {
	maxColdRatio, maxUpdateRatio, maxCPURatio, maxRSSRatio float64
	maxRSSBytes                                            int64
	maxUpdateP99Ms                                         float64
}

// targets are issue 6's targets by case.
var targets = map[benchCase]target{
	{Services: 1000, Gateways: 500}: {maxColdRatio: 1.5, maxUpdateRatio: 1.5, maxCPURatio: 3, maxRSSBytes: 400 << 20},
	{Services: 5000, Gateways: 500}: {maxColdRatio: 1.5, maxUpdateRatio: 1.5, maxCPURatio: 3, maxRSSBytes: 1536 << 20},
	{Services: 100, Gateways: 100}:  {maxUpdateP99Ms: 150},
}

// targets14 are issue 14's tighter targets against the floor: cold and
// update p99 within 1.1x, CPU and peak RSS within 1.5x.
var targets14 = map[benchCase]target{
	{Services: 1000, Gateways: 500}: {maxColdRatio: 1.1, maxUpdateRatio: 1.1, maxCPURatio: 1.5, maxRSSRatio: 1.5},
	{Services: 5000, Gateways: 500}: {maxColdRatio: 1.1, maxUpdateRatio: 1.1, maxCPURatio: 1.5, maxRSSRatio: 1.5},
}

// ratios are a result's figures over its floor's; -1 where unknown.
type ratios struct{ cold, update, cpu, rss float64 }

func markdown(m machine, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Wayfinder ADS benchmark\n\n")
	fmt.Fprintf(&b, "Run %s on %d CPUs (%s), %.1f GB memory, %s", m.Date, m.CPUs, m.CPUModel, m.MemoryGB, m.Go)
	if m.Commit != "" {
		fmt.Fprintf(&b, ", commit %s", m.Commit)
	}
	b.WriteString(".\n")
	if m.Load != "" {
		fmt.Fprintf(&b, "Load average at the start (1, 5, 15 min): %s.\n", m.Load)
	}
	if m.Note != "" {
		fmt.Fprintf(&b, "Note: %s.\n", m.Note)
	}
	runs := 0
	for _, r := range results {
		runs = max(runs, r.Runs)
	}
	if runs > 1 {
		fmt.Fprintf(&b, "Each figure is the median of %d runs per server, the servers taking turns.\n", runs)
	}
	b.WriteString("\nThe load tool runs in the bench process on the same machine; peak RSS (VmHWM) and CPU seconds (utime+stime) are the server's alone, from its start (config load and first push included) to the end of the update.\n\n")
	b.WriteString("| services x gateways | server | cold p50 / p99 / max (s) | update p50 / p99 / max (ms) | peak RSS (MB) | CPU (s) | ready (s) | MB per proxy | load tool CPU (s) | NACKs | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | ", r.Case.label(), r.Server)
		rep := r.Report
		if rep == nil {
			fmt.Fprintf(&b, "- | - | %s | %s | %.2f | - | - | - | %s |\n", rss(r), cpu(r), r.ReadySeconds, cellText(r.Error))
			continue
		}
		fmt.Fprintf(&b, "%s | ", coldCell(rep.Cold.Converged, rep.Cold.Total, rep.Cold.P50Ms/1000, rep.Cold.P99Ms/1000, rep.Cold.MaxMs/1000, "%.2f"))
		if u := rep.Update; u != nil {
			fmt.Fprintf(&b, "%s | ", coldCell(u.Converged, u.Total, u.P50Ms, u.P99Ms, u.MaxMs, "%.0f"))
		} else {
			b.WriteString("- | ")
		}
		errs := fmt.Sprint(rep.Errors)
		if r.Error != "" {
			errs += " (" + cellText(r.Error) + ")"
		}
		fmt.Fprintf(&b, "%s | %s | %.2f | %.2f | %.2f | %d | %s |\n", rss(r), cpu(r), r.ReadySeconds, rep.BytesPerProxy.Mean/(1<<20), r.LoadCPUSeconds, rep.NACKs, errs)
	}

	b.WriteString("\n## Against the floor (issue 6 and issue 14 targets)\n\n")
	b.WriteString("Each server against the floor of its protocol (pilot-delta against floor-delta when it ran). Issue 6: cold and update p99 within 1.5x, CPU within 3x, peak RSS under 400 MB (1,000 x 500) and 1.5 GB (5,000 x 500), and an update under 150 ms at 100 x 100. Issue 14: cold and update p99 within 1.1x, CPU and peak RSS within 1.5x.\n\n")
	b.WriteString("| services x gateways | server | floor | cold p99 vs floor | update p99 vs floor | CPU vs floor | peak RSS | peak RSS vs floor | issue 6 targets | issue 14 targets |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	type floorKey struct {
		c      benchCase
		server string
	}
	floors := map[floorKey]result{}
	for _, r := range results {
		if isFloor(r.Server) && r.Report != nil {
			floors[floorKey{r.Case, r.Server}] = r
		}
	}
	for _, r := range results {
		if isFloor(r.Server) || r.Report == nil {
			continue
		}
		f, ok := floors[floorKey{r.Case, "floor"}]
		if d, dok := floors[floorKey{r.Case, "floor-delta"}]; dok && r.Server == "pilot-delta" {
			f, ok = d, true
		}
		q := ratios{-1, -1, -1, -1}
		if ok {
			q.cold = ratio(r.Report.Cold.P99Ms, f.Report.Cold.P99Ms)
			if r.Report.Update != nil && f.Report.Update != nil {
				q.update = ratio(r.Report.Update.P99Ms, f.Report.Update.P99Ms)
			}
			q.cpu = ratio(r.CPUSeconds, f.CPUSeconds)
			q.rss = ratio(float64(r.PeakRSSBytes), float64(f.PeakRSSBytes))
		}
		against := "-"
		if ok {
			against = f.Server
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s MB | %s | %s | %s |\n", r.Case.label(), r.Server, against,
			ratioCell(q.cold), ratioCell(q.update), ratioCell(q.cpu), rss(r), ratioCell(q.rss), verdict(targets, r, q), verdict(targets14, r, q))
	}
	return b.String()
}

// isFloor reports whether a server name is a floor (of either protocol).
func isFloor(server string) bool { return strings.HasPrefix(server, "floor") }

// verdict checks a result against its case's targets in set, if any.
func verdict(set map[benchCase]target, r result, q ratios) string {
	t, ok := set[r.Case]
	if !ok {
		return "-"
	}
	var miss []string
	check := func(name string, v, limit float64, unit string) {
		if limit <= 0 {
			return
		}
		if v < 0 {
			miss = append(miss, name+" unknown")
		} else if v > limit {
			miss = append(miss, fmt.Sprintf("%s %.2f%s > %g%s", name, v, unit, limit, unit))
		}
	}
	check("cold", q.cold, t.maxColdRatio, "x")
	check("update", q.update, t.maxUpdateRatio, "x")
	check("CPU", q.cpu, t.maxCPURatio, "x")
	check("RSS", q.rss, t.maxRSSRatio, "x")
	check("RSS", float64(r.PeakRSSBytes)/(1<<20), float64(t.maxRSSBytes)/(1<<20), " MB")
	upd := -1.0
	if r.Report.Update != nil && r.Report.Update.Converged == r.Report.Update.Total {
		upd = r.Report.Update.P99Ms
	}
	check("update p99", upd, t.maxUpdateP99Ms, " ms")
	if len(miss) == 0 {
		return "met"
	}
	return "missed: " + strings.Join(miss, ", ")
}

func coldCell(conv, total int, p50, p99, mx float64, f string) string {
	s := fmt.Sprintf(f+" / "+f+" / "+f, p50, p99, mx)
	if conv < total {
		s += fmt.Sprintf(" (%d/%d converged)", conv, total)
	}
	return s
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return -1
	}
	return a / b
}

func ratioCell(r float64) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

func rss(r result) string {
	if r.PeakRSSBytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(r.PeakRSSBytes)/(1<<20))
}

func cpu(r result) string {
	if r.PeakRSSBytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.CPUSeconds)
}

func cellText(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "/"), "\n", " ") }
