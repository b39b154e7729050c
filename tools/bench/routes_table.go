package main

import (
	"fmt"
	"os"
	"strings"
)

// The route-propagation target: every-proxy p99 under 100 ms at 5,000
// HTTPRoutes and 100 proxies, for new routes and changed ones alike.
var routeTarget = routeCase{Routes: 5000, Proxies: 100}

const routeTargetP99Ms = 100

// routeMarkdown renders the route-propagation results with the machine
// and the conditions of the run.
func routeMarkdown(m machine, ro routeOptions, pilotArgs []string, results []routeResult) string {
	var b strings.Builder
	b.WriteString("# Wayfinder route propagation (Gateway API, Kubernetes mode)\n\n")
	writeMachine(&b, m)
	fmt.Fprintf(&b, "Command: `go run ./tools/bench %s`.\n", shellArgs(os.Args[1:]))
	b.WriteString("\nA real etcd and kube-apiserver on loopback per case; a GatewayClass of wayfinder.io/gateway-controller, one " +
		"Gateway with an HTTP listener on port 80 and the routes (each HTTPRoute its own hostname and one PathPrefix rule; on " +
		"the ListenerSet cases each ListenerSet one listener for its own wildcard hostname, attached through the Gateway's " +
		"allowedListeners, and its routes attached to it) created before pilot-discovery starts in Kubernetes mode; the " +
		"simulated proxies carry gateway.networking.k8s.io/gateway-name of the Gateway in its namespace and connect to the " +
		"plaintext ADS port once it is ready. The API server, etcd, pilot-discovery and the load tool share the machine.")
	if len(pilotArgs) > 0 {
		fmt.Fprintf(&b, " pilot-discovery flags: `%s`.", strings.Join(pilotArgs, " "))
	}
	b.WriteString("\n\n")

	b.WriteString("| case | server | objects created | informer sync | first push | cold p50 / p99 | converged | peak RSS at convergence | CPU to convergence | received per proxy (whole run) | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		cold, conv := "-", "-"
		if r.Cold != nil {
			cold = fmt.Sprintf("%s / %s", secs(r.Cold.P50Ms), secs(r.Cold.P99Ms))
			conv = fmt.Sprintf("%d/%d", r.Cold.Converged, r.Cold.Total)
		}
		errs := fmt.Sprintf("%d NACKs", r.NACKs)
		if r.Error != "" {
			errs = r.Error
		}
		fmt.Fprintf(&b, "| %s | %s | %d in %.1f s | %.2f s | %.2f s | %s | %s | %s MB | %.1f s | %.1f MB | %s |\n",
			r.Case.label(), r.Server, r.Objects, r.CreateSeconds, r.SyncSeconds, r.FirstPushSeconds, cold, conv,
			mb(r.PeakRSSBytes), r.CPUSeconds, r.BytesPerProxy/(1<<20), errs)
	}

	fmt.Fprintf(&b, "\n## Route propagation\n\nTwo phases of %d changes each, one change at a time: a new HTTPRoute created "+
		"(\"create\"), then an existing route's path changed with a merge patch (\"update\", a different route each time). "+
		"Change K writes the path /wfmark-K; its latency runs from the start of the API write to the last proxy's ACK of a "+
		"route table carrying it, and the next change starts %s after that (or after %s without it). \"from the API's answer\" counts from the "+
		"API server's answer to the write instead: the control plane's share. CPU per change is the server's CPU over the "+
		"phase divided by its changes (translation, status writes and sending to every proxy, and what runs during the pauses); RSS and the Go heap in use "+
		"are read at the phase's start and end; pushes are pilot-discovery's over the phase, with their compute time per change "+
		"(wayfinder_push_duration_seconds; sending is not in it).\n\n", ro.changes, ro.gap, ro.timeout)
	b.WriteString("The floor server serves proxy 0's capture of one such change (a route created before the phases) to the " +
		"same number of proxies and sends the changed route table with no translation: its latency is from the switch to " +
		"the last proxy's ACK, its CPU the sending, its RSS the peak; medians of its runs.\n\n")
	b.WriteString("| case | server | phase | changes (reached every proxy) | every proxy p50 / p99 / max | from the API's answer p50 / p99 | API write p50 / p99 | CPU per change (load tool's) | pushes (compute per change) | RSS start -> end | Go heap start -> end | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		for _, ph := range r.Phases {
			errs := fmt.Sprint(ph.Failed)
			if len(ph.Errors) > 0 {
				errs += ": " + strings.Join(ph.Errors, "; ")
			}
			pushes := "-"
			if ph.Server != nil && ph.Changes > 0 {
				pushes = fmt.Sprintf("%.0f (%.1f ms)", ph.Server.Pushes, ph.Server.PushSeconds*1000/float64(ph.Changes))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d (%d) | %.0f / %.0f / %.0f ms | %.0f / %.0f ms | %.0f / %.0f ms | %.1f ms (%.1f ms) | %s | %s -> %s MB | %s -> %s MB | %s |\n",
				r.Case.label(), r.Server, ph.Name, ph.Changes, ph.Complete, ph.AllP50Ms, ph.AllP99Ms, ph.AllMaxMs,
				ph.AnsweredP50Ms, ph.AnsweredP99Ms, ph.WriteP50Ms, ph.WriteP99Ms, ph.CPUPerChangeMs, perChange(ph.LoadCPUSeconds, ph.Changes), pushes,
				mb(ph.RSSStartBytes), mb(ph.RSSEndBytes), mb(ph.HeapStartBytes), mb(ph.HeapEndBytes), errs)
		}
		if f := r.Floor; f != nil {
			if f.Error != "" {
				fmt.Fprintf(&b, "| %s | floor | - | - | - | - | - | - | - | - | - | %s |\n", r.Case.label(), f.Error)
			} else {
				fmt.Fprintf(&b, "| %s | floor (%d runs) | one change | 1 per run | %.0f ms | - | - | %.1f ms | - | peak %s MB | - | 0 |\n",
					r.Case.label(), f.Runs, f.AllMs, f.CPUPerChangeMs, mb(f.PeakRSSBytes))
			}
		}
	}
	for _, r := range results {
		if r.Profile != "" {
			fmt.Fprintf(&b, "\nCPU profile of %s over the update phase: `%s` (`go tool pprof -top %s`).\n", r.Case.label(), r.Profile, r.Profile)
		}
	}
	b.WriteString("\n" + routeTargets(results))
	return b.String()
}

// routeTargets checks the target where the run has its case.
func routeTargets(results []routeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Target (at %s): every-proxy p99 under %d ms, for new and changed routes.\n\n", routeTarget.label(), routeTargetP99Ms)
	found := false
	for _, r := range results {
		if r.Case != routeTarget {
			continue
		}
		for _, ph := range r.Phases {
			found = true
			fmt.Fprintf(&b, "- %s, %s: p99 %.0f ms over %d of %d changes: %s\n", r.Server, ph.Name, ph.AllP99Ms, ph.Complete, ph.Changes,
				metOrNot(ph.Complete == ph.Changes-ph.Failed && ph.Complete > 0 && ph.AllP99Ms < routeTargetP99Ms))
		}
	}
	if !found {
		b.WriteString("- not measured in this run\n")
	}
	return b.String()
}

func mb(bytes int64) string { return fmt.Sprintf("%.0f", float64(bytes)/(1<<20)) }

func logRouteResult(r routeResult) {
	msg := fmt.Sprintf("routes %s %s: objects=%d in %.1fs sync=%.1fs first-push=%.1fs rss=%sMB cpu=%.1fs", r.Case, r.Server,
		r.Objects, r.CreateSeconds, r.SyncSeconds, r.FirstPushSeconds, mb(r.PeakRSSBytes), r.CPUSeconds)
	if r.Cold != nil {
		msg += fmt.Sprintf(" cold p99=%.0fms (%d/%d)", r.Cold.P99Ms, r.Cold.Converged, r.Cold.Total)
	}
	for _, ph := range r.Phases {
		msg += fmt.Sprintf(" | %s: %d/%d every-proxy p50=%.0fms p99=%.0fms cpu/change=%.1fms rss %s->%sMB",
			ph.Name, ph.Complete, ph.Changes, ph.AllP50Ms, ph.AllP99Ms, ph.CPUPerChangeMs, mb(ph.RSSStartBytes), mb(ph.RSSEndBytes))
		if len(ph.Errors) > 0 {
			msg += " errors: " + strings.Join(ph.Errors, "; ")
		}
	}
	if f := r.Floor; f != nil {
		if f.Error != "" {
			msg += " | floor error: " + f.Error
		} else {
			msg += fmt.Sprintf(" | floor: %.0fms cpu/change=%.1fms rss=%sMB", f.AllMs, f.CPUPerChangeMs, mb(f.PeakRSSBytes))
		}
	}
	if r.Error != "" {
		msg += " error: " + r.Error
	}
	fmt.Fprintln(os.Stderr, msg)
}

// perChange is seconds spread over n changes, in milliseconds.
func perChange(seconds float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return seconds * 1000 / float64(n)
}

// shellArgs writes args as a shell would need them: empty or unusual
// ones in single quotes.
func shellArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?;&|<>(){}[]~#!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
