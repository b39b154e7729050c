package main

import (
	"slices"

	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

// medianResult folds repeated runs of one case and server into one result
// whose figures are each the median over the runs that completed: on a
// shared 2-core machine a single run at 5,000 services varies by half
// either way (page faults in the load tool, mostly), and a median of runs
// taken in turns with the other servers is what a comparison can rest on.
// Runs that failed are counted out; with none completed the first run's
// error stands.
func medianResult(runs []result) result {
	var ok []result
	for _, r := range runs {
		if r.Error == "" && r.Report != nil {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		out := runs[0]
		out.Runs = len(runs)
		return out
	}
	out := ok[0]
	rep := *ok[0].Report
	out.Report = &rep
	out.Runs = len(ok)
	med := func(f func(result) float64) float64 { return median(ok, f) }
	out.ReadySeconds = med(func(r result) float64 { return r.ReadySeconds })
	out.CPUSeconds = med(func(r result) float64 { return r.CPUSeconds })
	out.PeakRSSBytes = int64(med(func(r result) float64 { return float64(r.PeakRSSBytes) }))
	out.LoadCPUSeconds = med(func(r result) float64 { return r.LoadCPUSeconds })
	out.cpuSplit = medianSplit(ok)
	out.Counters = medianCounters(ok)
	rep.Cold = medianLatency(ok, func(r result) *load.Latency { return &r.Report.Cold })
	if rep.Update != nil {
		withUpdate := slices.DeleteFunc(slices.Clone(ok), func(r result) bool { return r.Report.Update == nil })
		u := medianLatency(withUpdate, func(r result) *load.Latency { return r.Report.Update })
		rep.Update = &u
	}
	return out
}

// medianLatency takes each percentile's median; Converged is the fewest
// any run reached, so a run that left gateways behind is not hidden.
func medianLatency(runs []result, get func(result) *load.Latency) load.Latency {
	out := *get(runs[0])
	pick := func(f func(*load.Latency) float64) float64 {
		return median(runs, func(r result) float64 { return f(get(r)) })
	}
	out.P50Ms = pick(func(l *load.Latency) float64 { return l.P50Ms })
	out.P99Ms = pick(func(l *load.Latency) float64 { return l.P99Ms })
	out.MaxMs = pick(func(l *load.Latency) float64 { return l.MaxMs })
	for _, r := range runs {
		out.Converged = min(out.Converged, get(r).Converged)
	}
	return out
}

// median is the median of f over runs (the mean of the middle two for an
// even count).
func median(runs []result, f func(result) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
