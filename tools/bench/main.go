// Command bench runs the issue-6 benchmark matrix (services x gateways)
// against a fresh pilot-discovery and against the floor server, and writes
// results.json, a Markdown table (results.md) and a chart (results.png)
// under --out (bench-results/ by default, git-ignored). `make bench` runs it.
//
// For each case it generates the workload, starts pilot-discovery on it
// (loopback ports), waits for /healthz/ready, runs the load tool in this
// process (cold convergence, then the one-VirtualService update), and reads
// the server's peak RSS (VmHWM) and CPU seconds (utime+stime) from /proc.
// Gateway 0 captures pilot-discovery's responses, and the floor server is
// then started on that capture and measured the same way, so every row has
// its floor beside it.
//
// A case may add gateway policies to the workload (1000x500+ap500+ra100:
// 500 AuthorizationPolicies and 100 RequestAuthentications), and
// pilot-discovery's translation and push counters are read at ready, at
// cold convergence and at the end (counters.go), so a run with and
// without policies shows what they cost and that the gateways still share
// one translation.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// options are the bench's flags.
type options struct {
	// commit is the checkout's commit when the bench started.
	commit string
	// load is the machine's load average when the bench started.
	load      string
	out       string
	cases     []benchCase
	pilot     string
	floor     string
	pilotArgs []string
	timeout   time.Duration
	delta     bool
	skipFloor bool
	appendRes bool
	note      string
	repeat    int
}

// result is one measured run.
type result struct {
	Case   benchCase `json:"case"`
	Server string    `json:"server"` // "pilot", "pilot-delta" or "floor"
	// ReadySeconds is how long the server took to become ready (config
	// loaded, first push done) before the gateways connected.
	ReadySeconds float64 `json:"ready_seconds"`
	usage
	// LoadCPUSeconds is the load tool's own CPU time (this process) during
	// the run: when it nears the machine's cores times the run's length,
	// the tool, not the server, bounds the figures.
	LoadCPUSeconds float64 `json:"load_cpu_seconds"`
	cpuSplit
	// Counters are pilot-discovery's translations, pushes and Go heap
	// by phase (see counters.go); nil for the floor.
	Counters *serverCounters `json:"counters,omitempty"`
	Report   *load.Report    `json:"report,omitempty"`
	// Runs is how many runs completed; with more than one, every figure
	// is the median over them (see medianResult).
	Runs  int    `json:"runs,omitempty"`
	Error string `json:"error,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	flag.StringVar(&o.out, "out", "bench-results", "output folder")
	cases := flag.String("cases", fullMatrix, "cases as SERVICESxGATEWAYS, comma separated; +apA+raR adds A AuthorizationPolicies and R RequestAuthentications on the gateways (1000x500+ap500+ra100), +efE E EnvoyFilters")
	quick := flag.Bool("quick", false, "run the quick subset ("+quickMatrix+") instead of --cases")
	flag.StringVar(&o.pilot, "pilot", "", "pilot-discovery binary; empty builds ./pilot/cmd/pilot-discovery into OUT/bin")
	flag.StringVar(&o.floor, "floor", "", "floor binary; empty builds ./tools/floor into OUT/bin")
	pilotArgs := flag.String("pilot-args", "", "extra pilot-discovery flags, space separated (e.g. debounce settings)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "bound on each load run")
	flag.IntVar(&o.repeat, "repeat", 1, "run each case this many times, the servers in turns, and report each figure's median")
	flag.BoolVar(&o.delta, "delta", false, "also run each case against pilot-discovery with delta xDS")
	flag.BoolVar(&o.skipFloor, "skip-floor", false, "do not run the floor server")
	flag.BoolVar(&o.appendRes, "append", false, "keep the results of other cases from OUT/results.json (to run the matrix in parts)")
	chartOnly := flag.Bool("chart-only", false, "run nothing: draw OUT/results.png from OUT/results.json")
	kube := registerKubeFlags(flag.CommandLine)
	cpuProfile := flag.String("cpu-profile", "", "write the bench process's own CPU profile here (the load tool's cost, and in Kubernetes mode the workload writer's)")
	flag.StringVar(&o.note, "note", "", "note printed with the table (what else ran on the machine, say)")
	flag.Parse()
	o.commit = sourceCommit()
	o.load = loadAverage()
	if flag.NArg() > 0 {
		return errors.New("unexpected arguments; see -h")
	}
	if *chartOnly {
		results, err := earlierResults(filepath.Join(o.out, "results.json"), nil)
		if err != nil {
			return err
		}
		if len(results) == 0 {
			return fmt.Errorf("%s: no results to draw", filepath.Join(o.out, "results.json"))
		}
		return writeChart(filepath.Join(o.out, "results.png"), results)
	}
	if *quick {
		*cases = quickMatrix
	}
	var err error
	if o.cases, err = parseCases(*cases); err != nil {
		return err
	}
	o.pilotArgs = strings.Fields(*pilotArgs)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if kube.enabled {
		return runKubeMode(o, kube)
	}
	if err := prepareOut(&o, "work", "dumps"); err != nil {
		return err
	}
	if o.floor == "" && !o.skipFloor {
		o.floor = filepath.Join(o.out, "bin", "floor")
		if err := goBuild(o.floor, "./tools/floor"); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now().UTC()
	var results []result
	if o.appendRes {
		if results, err = earlierResults(filepath.Join(o.out, "results.json"), o.cases); err != nil {
			return err
		}
	}
	for _, c := range o.cases {
		for _, r := range runCase(ctx, o, c) {
			logResult(r)
			results = append(results, r)
			// Written after every run, so an interrupted matrix keeps what it measured.
			if err := writeResults(o, started, results); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	fmt.Println("wrote", filepath.Join(o.out, "results.md"), "and results.png")
	return nil
}

// earlierResults reads a previous results.json, without the cases about
// to run again. A missing file is no error.
func earlierResults(path string, rerun []benchCase) ([]result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var prev struct {
		Results []result `json:"results"`
	}
	if err := json.Unmarshal(data, &prev); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []result
	for _, r := range prev.Results {
		if !slices.Contains(rerun, r.Case) {
			out = append(out, r)
		}
	}
	return out, nil
}

func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func logResult(r result) {
	msg := fmt.Sprintf("%-8s %-11s rss=%.0fMB cpu=%.1fs", r.Case, r.Server, float64(r.PeakRSSBytes)/(1<<20), r.CPUSeconds)
	if r.Report != nil {
		msg += fmt.Sprintf(" cold p99=%.0fms", r.Report.Cold.P99Ms)
		if u := r.Report.Update; u != nil {
			msg += fmt.Sprintf(" update p99=%.0fms", u.P99Ms)
		}
	}
	if r.Runs > 1 {
		msg += fmt.Sprintf(" (median of %d runs)", r.Runs)
	}
	if r.Error != "" {
		msg += " error: " + r.Error
	}
	fmt.Fprintln(os.Stderr, msg)
	logSplit(r)
	if c := r.Counters; c != nil {
		fmt.Fprintf(os.Stderr, "%s %s: to ready: %s; to cold convergence: %s; update: %s\n", r.Case, r.Server,
			translationsCell(c.Ready), translationsCell(c.Cold), translationsCell(c.Update))
	}
}

// runCase measures pilot-discovery (and delta, if asked) and the floor on c.
func runCase(ctx context.Context, o options, c benchCase) []result {
	dir, err := filepath.Abs(filepath.Join(o.out, "work", c.String()))
	if err != nil {
		return []result{{Case: c, Server: "pilot", Error: err.Error()}}
	}
	dumps := filepath.Join(o.out, "dumps", c.String())
	_ = os.RemoveAll(dumps)
	_ = os.RemoveAll(dumps + "-delta")
	// Each round runs every server once, so drift on the machine touches
	// them alike; the figures are medians over the rounds.
	var servers [][]result
	for round := range max(o.repeat, 1) {
		rr := []result{runPilot(ctx, o, c, dir, false, dumps)}
		if o.delta {
			rr = append(rr, runPilot(ctx, o, c, dir, true, dumps+"-delta"))
		}
		if !o.skipFloor {
			rr = append(rr, runFloor(ctx, o, c, dumps, false))
			if o.delta {
				// Delta is measured against a floor speaking delta, so the
				// load tool's own delta bookkeeping is on both sides.
				rr = append(rr, runFloor(ctx, o, c, dumps+"-delta", true))
			}
		}
		for i, r := range rr {
			if round == 0 {
				servers = append(servers, nil)
			}
			if o.repeat > 1 {
				logResult(r)
			}
			servers[i] = append(servers[i], r)
		}
		if ctx.Err() != nil {
			break
		}
	}
	out := make([]result, len(servers))
	for i, runs := range servers {
		out[i] = medianResult(runs)
	}
	return out
}

func runPilot(ctx context.Context, o options, c benchCase, dir string, delta bool, dumps string) result {
	res := result{Case: c, Server: "pilot"}
	if delta {
		res.Server = "pilot-delta"
	}
	// A fresh workload each run: the previous run's update changed it.
	_ = os.RemoveAll(dir)
	if err := workload.Write(dir, workload.Options{Services: c.Services,
		AuthorizationPolicies: c.AuthorizationPolicies, RequestAuthentications: c.RequestAuthentications, EnvoyFilters: c.EnvoyFilters}); err != nil {
		res.Error = err.Error()
		return res
	}
	grpcAddr, err1 := freePort()
	httpAddr, err2 := freePort()
	if err := errors.Join(err1, err2); err != nil {
		res.Error = err.Error()
		return res
	}
	// The workload writes every file atomically (a rename), which the
	// file watcher's settle window (100 ms by default) exists to wait
	// out for editors that do not; the bench measures the update, not
	// that window. --pilot-args can set it back.
	args := append([]string{"discovery", "--config-dir", dir, "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--log-level", "warn",
		"--config-settle", benchSettle}, o.pilotArgs...)
	return measure(ctx, o, res, o.pilot, args, "http://"+httpAddr+"/healthz/ready", "http://"+httpAddr+"/metrics", load.Options{
		Address: grpcAddr, Gateways: c.Gateways, Delta: delta, DumpDir: dumps,
		Trigger: func(context.Context) error {
			return workload.WriteUpdate(dir, 0, c.Services, workload.UpdatePrefix)
		},
	})
}

func runFloor(ctx context.Context, o options, c benchCase, dumps string, delta bool) result {
	res := result{Case: c, Server: "floor"}
	if delta {
		res.Server = "floor-delta"
	}
	if _, err := os.Stat(filepath.Join(dumps, "update")); err != nil {
		res.Error = "no capture of pilot-discovery's responses for this case (its run did not converge)"
		return res
	}
	grpcAddr, err1 := freePort()
	httpAddr, err2 := freePort()
	if err := errors.Join(err1, err2); err != nil {
		res.Error = err.Error()
		return res
	}
	args := []string{"--dump-dir", dumps, "--grpc-addr", grpcAddr, "--http-addr", httpAddr}
	if delta {
		args = append(args, "--delta")
	}
	return measure(ctx, o, res, o.floor, args, "http://"+httpAddr+"/healthz/ready", "", load.Options{
		Address: grpcAddr, Gateways: c.Gateways, Delta: delta,
		Trigger: func(ctx context.Context) error { return postUpdate(ctx, "http://"+httpAddr+"/update") },
	})
}

// measure starts a server, waits until it is ready, runs the load and
// reads the server's usage, and its counters from metricsURL unless that
// is empty. The counters are read outside the timed phases and after
// the usage, so that reading them adds to no figure.
func measure(ctx context.Context, o options, res result, bin string, args []string, readyURL, metricsURL string, lo load.Options) result {
	logPath := filepath.Join(o.out, "logs", fmt.Sprintf("%s-%s.log", res.Case, res.Server))
	p, err := startProc(bin, args, logPath, nil)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := p.waitReady(rctx, readyURL); err != nil {
		res.Error = err.Error()
		return res
	}
	res.ReadySeconds = time.Since(start).Seconds()
	res.started(p)
	lo.Trigger = res.around(p, lo.Trigger)
	var marks *counterMarks
	if metricsURL != "" {
		marks = &counterMarks{url: metricsURL}
		marks.mark(rctx, &marks.ready, &marks.okReady)
		lo.Converged = func(ctx context.Context) { marks.mark(ctx, &marks.cold, &marks.okCold) }
	}

	lo.Timeout = o.timeout
	lo.Validate = true
	if lo.UpdatePrefix == "" {
		lo.UpdatePrefix = workload.UpdatePrefix
	}
	lo.Logger = slog.New(slog.DiscardHandler)
	selfBefore, _ := selfCPUSeconds()
	rep, err := load.Run(ctx, lo)
	selfAfter, _ := selfCPUSeconds()
	res.LoadCPUSeconds = selfAfter - selfBefore
	u, uerr := p.usage()
	res.usage = u
	res.finished(u)
	if marks != nil {
		marks.mark(rctx, &marks.end, &marks.okEnd)
		res.Counters = marks.result()
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Report = rep
	switch {
	case uerr != nil:
		res.Error = "reading usage: " + uerr.Error()
	case rep.Unimplemented:
		res.Error = "the server answered Unimplemented for " + rep.Mode + " ADS"
	case rep.TimedOut:
		res.Error = "timed out"
	}
	return res
}

func writeResults(o options, started time.Time, results []result) error {
	m := machineInfo(o.note, o.commit, o.load, started)
	if err := writeReport(o.out, "results", m, results, markdown(m, results)+cpuSection(results)+countersSection(results)); err != nil {
		return err
	}
	return writeChart(filepath.Join(o.out, "results.png"), results)
}

// writeReport writes NAME.json (the machine and the results, for
// --chart-only and later comparison) and NAME.md (md) into dir.
func writeReport[T any](dir, name string, m machine, results []T, md string) error {
	data, err := json.MarshalIndent(struct {
		Machine machine `json:"machine"`
		Results []T     `json:"results"`
	}{m, results}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(md), 0o644)
}

// prepareOut creates OUT's bin and logs folders (and dirs), and builds
// pilot-discovery into OUT/bin unless --pilot names a binary.
func prepareOut(o *options, dirs ...string) error {
	for _, d := range append([]string{"bin", "logs"}, dirs...) {
		if err := os.MkdirAll(filepath.Join(o.out, d), 0o755); err != nil {
			return err
		}
	}
	if o.pilot == "" {
		o.pilot = filepath.Join(o.out, "bin", "pilot-discovery")
		if err := goBuild(o.pilot, "./pilot/cmd/pilot-discovery"); err != nil {
			return err
		}
	}
	return nil
}
