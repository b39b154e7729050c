package main

import (
	"fmt"
	"strings"
)

// Targets of issue 14 for the Kubernetes-mode churn, checked at 1,000
// services and 500 gateways.
const (
	churnTargetRate    = 200
	churnTargetP99Ms   = 200
	churnTargetRSSPct  = 5
	churnTargetCaseSvc = 1000
	churnTargetCaseGws = 500
)

// kubeMarkdown renders the Kubernetes-mode results with the machine and
// the conditions of the run.
func kubeMarkdown(m machine, ko kubeOptions, pilotArgs []string, results []kubeResult) string {
	var b strings.Builder
	b.WriteString("# Wayfinder Kubernetes-mode benchmark\n\n")
	writeMachine(&b, m)
	b.WriteString("\nA real etcd and kube-apiserver on loopback per case; the workload (one Gateway, per Service a Service, an " +
		"EndpointSlice of 3 endpoints, a VirtualService and a DestinationRule) created in it before pilot-discovery starts in " +
		"Kubernetes mode; the simulated gateways connect to its plaintext ADS port once it is ready. The API server, etcd, " +
		"pilot-discovery and the load tool share the machine.")
	if len(pilotArgs) > 0 {
		fmt.Fprintf(&b, " pilot-discovery flags: `%s`.", strings.Join(pilotArgs, " "))
	}
	b.WriteString("\n\n")

	b.WriteString("| services x gateways | server | objects created | informer sync | first push | cold p50 / p99 | converged | peak RSS | CPU | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		cold, conv := "-", "-"
		if r.Cold != nil {
			cold = fmt.Sprintf("%s / %s", secs(r.Cold.P50Ms), secs(r.Cold.P99Ms))
			conv = fmt.Sprintf("%d/%d", r.Cold.Converged, r.Cold.Total)
		}
		errs := "0"
		if r.Report != nil {
			errs = fmt.Sprintf("%d (%d NACKs)", r.Report.Errors, r.Report.NACKs)
		}
		if r.Error != "" {
			errs = r.Error
		}
		fmt.Fprintf(&b, "| %d x %d | %s | %d in %.1f s | %.2f s | %.2f s | %s | %s | %.0f MB | %.1f s | %s |\n",
			r.Case.Services, r.Case.Gateways, r.Server, r.Objects, r.CreateSeconds, r.SyncSeconds, r.FirstPushSeconds,
			cold, conv, float64(r.PeakRSSBytes)/(1<<20), r.CPUSeconds, errs)
	}
	b.WriteString("\nInformer sync and first push are from pilot-discovery's start (its log lines `kubernetes services synced`, " +
		"`kubernetes config synced` and `config synced and first push computed`); cold is from the gateways' connecting, " +
		"after the first push; peak RSS (VmHWM) and CPU (utime+stime) are the server's once every gateway converged.\n")

	var churn bool
	for _, r := range results {
		churn = churn || len(r.Churn) > 0
	}
	if !churn {
		return b.String()
	}
	fmt.Fprintf(&b, "\n## Endpoint churn\n\nEach phase updates one EndpointSlice (Services in turn) at the given rate for %s, "+
		"then waits up to %s for the last changes. A change writes a new address into endpoint 0; its latency runs from the "+
		"start of the API write to a gateway's ACK of an EDS response carrying that address (or a later change of the same "+
		"Service). \"every gateway\" is per change, until the last gateway ACKed it; \"per ACK\" is over every "+
		"(change, gateway) pair. The writes are open loop: when the API server answers too slowly for the rate, fewer "+
		"changes are issued and the achieved rate says so. CPU and RSS are the server's, from the phase's start to the end "+
		"of its drain; the Go heap in use (from /metrics) separates growth of live data from garbage not yet collected. "+
		"RSS is also read every second: the middle figure is %s into the phase, then the end and in brackets the "+
		"growth over the phase and from that point to the end (a step while the churn starts, against growth that goes on).\n\n",
		ko.duration, ko.drain, warmUp(ko.duration))
	b.WriteString("| services x gateways | rate | changes (achieved /s) | reached every gateway | every gateway p50 / p99 / max | per ACK p50 / p99 | API write p50 / p99 | every gateway from the API's answer p50 / p99 | CPU per change | RSS start -> warm -> end (growth; after warm-up) | Go heap start -> end | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		for _, c := range r.Churn {
			errs := fmt.Sprint(c.Failed)
			if len(c.Errors) > 0 {
				errs += ": " + strings.Join(c.Errors, "; ")
			}
			fmt.Fprintf(&b, "| %d x %d | %g/s | %d (%.1f) | %d | %.0f / %.0f / %.0f ms | %.0f / %.0f ms | %.0f / %.0f ms | %.0f / %.0f ms | %.2f ms | %.0f -> %.0f -> %.0f MB (%+.1f%%; %+.1f%%) | %.0f -> %.0f MB | %s |\n",
				r.Case.Services, r.Case.Gateways, c.Rate, c.Changes, c.AchievedRate, c.Complete,
				c.AllP50Ms, c.AllP99Ms, c.AllMaxMs, c.AckP50Ms, c.AckP99Ms, c.WriteP50Ms, c.WriteP99Ms,
				c.AnsweredP50Ms, c.AnsweredP99Ms, c.CPUPerChangeMs,
				float64(c.RSSStartBytes)/(1<<20), float64(c.RSSWarmBytes)/(1<<20), float64(c.RSSEndBytes)/(1<<20), c.RSSGrowthPct, c.RSSDriftPct,
				float64(c.HeapStartBytes)/(1<<20), float64(c.HeapEndBytes)/(1<<20), errs)
		}
	}
	b.WriteString("\n" + churnTargets(results))
	return b.String()
}

// churnTargets checks issue 14's targets where the run has the case.
func churnTargets(results []kubeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Targets (issue 14, at %d x %d): churn p99 under %d ms at %d/s; RSS growth under %d%% over each phase.\n\n",
		churnTargetCaseSvc, churnTargetCaseGws, churnTargetP99Ms, churnTargetRate, churnTargetRSSPct)
	found := false
	for _, r := range results {
		if r.Case.Services != churnTargetCaseSvc || r.Case.Gateways != churnTargetCaseGws {
			continue
		}
		for _, c := range r.Churn {
			found = true
			if c.Rate == churnTargetRate {
				fmt.Fprintf(&b, "- %s, %g/s: every-gateway p99 %.0f ms, per-ACK p99 %.0f ms: %s\n", r.Server, c.Rate,
					c.AllP99Ms, c.AckP99Ms, metOrNot(c.Complete == c.Changes-c.Failed && c.AllP99Ms < churnTargetP99Ms))
			}
			fmt.Fprintf(&b, "- %s, %g/s: RSS growth over the phase %+.1f%%: %s\n", r.Server, c.Rate, c.RSSGrowthPct, metOrNot(c.RSSGrowthPct < churnTargetRSSPct))
			if c.RSSWarmBytes > 0 {
				fmt.Fprintf(&b, "  - from %gs in to the end (not the target's measure; it tells a step at the start from growth that goes on): %+.1f%%\n",
					c.WarmSeconds, c.RSSDriftPct)
			}
		}
	}
	if !found {
		b.WriteString("- not measured in this run\n")
	}
	return b.String()
}

func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func secs(ms float64) string { return fmt.Sprintf("%.2f s", ms/1000) }

// writeMachine writes the lines of a Kubernetes-mode report that say
// where and when it ran: date, CPUs, memory, Go, commit, load average and
// the conditions noted.
func writeMachine(b *strings.Builder, m machine) {
	fmt.Fprintf(b, "%s, %d CPUs", m.Date, m.CPUs)
	if m.CPUModel != "" {
		fmt.Fprintf(b, " (%s)", m.CPUModel)
	}
	fmt.Fprintf(b, ", %.1f GB, %s", m.MemoryGB, m.Go)
	if m.Commit != "" {
		fmt.Fprintf(b, ", commit %s", m.Commit)
	}
	b.WriteString(".\n")
	if m.Load != "" {
		fmt.Fprintf(b, "Load average at the start (1, 5, 15 min): %s.\n", m.Load)
	}
	if m.Note != "" {
		fmt.Fprintf(b, "Conditions: %s.\n", strings.TrimSuffix(m.Note, "."))
	}
}
