package main

// The Kubernetes-mode benchmark (--kube, `make bench-kube`): per case, a
// real etcd and kube-apiserver on loopback (pkg/test/apiserver), the
// workload written into it as Services, EndpointSlices, a Gateway,
// VirtualServices and DestinationRules (workload.WriteKube), the real
// pilot-discovery in Kubernetes mode against it, and G simulated gateways
// on its plaintext ADS port. Figures: informer sync and first push (from
// pilot-discovery's log lines), cold convergence, peak RSS and CPU; then,
// on the cases asked for, the endpoint-churn phases (churn.go).

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// kubeFlags are the flags of the Kubernetes mode, registered next to the
// file-mode ones.
type kubeFlags struct {
	enabled       bool
	cases         string
	churnCases    string
	churnRates    string
	churnDuration time.Duration
	churnDrain    time.Duration
	// The route-propagation cases (routes.go).
	routeCases   string
	routeChanges int
	routeTimeout time.Duration
	routeGap     time.Duration
	routeFloor   int
	routeProfile string
}

func registerKubeFlags(fs *flag.FlagSet) *kubeFlags {
	k := &kubeFlags{}
	fs.BoolVar(&k.enabled, "kube", false, "run the Kubernetes-mode benchmark (etcd + kube-apiserver on loopback) instead of the file-mode matrix")
	fs.StringVar(&k.cases, "kube-cases", "1000x500,5000x500", "Kubernetes-mode cases as SERVICESxGATEWAYS")
	fs.StringVar(&k.churnCases, "churn-cases", "1000x500", "Kubernetes-mode cases that also run the endpoint churn (empty: none)")
	fs.StringVar(&k.churnRates, "churn-rates", "50,200", "EndpointSlice updates per second, one churn phase each")
	fs.DurationVar(&k.churnDuration, "churn-duration", 5*time.Minute, "length of each churn phase")
	fs.DurationVar(&k.churnDrain, "churn-drain", 30*time.Second, "after a churn phase, how long to wait for the last changes to reach every gateway")
	fs.StringVar(&k.routeCases, "route-cases", defaultRouteCases, "Gateway API route-propagation cases: hrROUTESxPROXIES (HTTPRoutes on one Gateway) or lsSETSxROUTESxPROXIES (ListenerSets of ROUTES routes each), comma separated; empty: none")
	fs.IntVar(&k.routeChanges, "route-changes", 100, "route-propagation changes per phase (new HTTPRoutes, then changes of existing ones)")
	fs.DurationVar(&k.routeTimeout, "route-change-timeout", 30*time.Second, "how long one route change may take to reach every proxy before the next is made")
	fs.DurationVar(&k.routeGap, "route-change-gap", 250*time.Millisecond, "pause after a route change reached every proxy before the next (pilot-discovery debounces a change within --debounce-after of the one before as part of a burst)")
	fs.IntVar(&k.routeFloor, "route-floor-runs", 3, "floor-server runs per route-propagation case (0: none)")
	fs.StringVar(&k.routeProfile, "route-profile", "", "take pilot-discovery's CPU profile (20 s from the start of the update phase) into PREFIX-CASE.pprof")
	return k
}

// kubeOptions are the parsed Kubernetes-mode settings.
type kubeOptions struct {
	cases, churnCases []benchCase
	rates             []float64
	duration, drain   time.Duration
	routes            routeOptions
}

func (k *kubeFlags) parse() (kubeOptions, error) {
	var ko kubeOptions
	var err error
	if ko.routes.cases, err = parseRouteCases(k.routeCases); err != nil {
		return ko, fmt.Errorf("--route-cases: %w", err)
	}
	// --kube-cases '' runs the route-propagation cases alone.
	if strings.TrimSpace(k.cases) != "" || len(ko.routes.cases) == 0 {
		if ko.cases, err = parseCases(k.cases); err != nil {
			return ko, fmt.Errorf("--kube-cases: %w", err)
		}
	}
	if len(ko.routes.cases) > 0 {
		if k.routeChanges < 1 || k.routeChanges > 10000 || k.routeTimeout <= 0 || k.routeGap < 0 || k.routeFloor < 0 {
			return ko, errors.New("--route-changes must be 1-10000, --route-change-timeout positive, --route-change-gap and --route-floor-runs 0 or more")
		}
		ko.routes.changes, ko.routes.timeout, ko.routes.gap = k.routeChanges, k.routeTimeout, k.routeGap
		ko.routes.floorRuns, ko.routes.profile = k.routeFloor, k.routeProfile
	}
	if strings.TrimSpace(k.churnCases) != "" {
		if ko.churnCases, err = parseCases(k.churnCases); err != nil {
			return ko, fmt.Errorf("--churn-cases: %w", err)
		}
	}
	for _, c := range slices.Concat(ko.cases, ko.churnCases) {
		if c.hasPolicies() {
			// The Kubernetes workload writer has no policies yet.
			return ko, fmt.Errorf("case %s: gateway policies (+ap, +ra) are measured in file mode only", c)
		}
	}
	for part := range strings.SplitSeq(k.churnRates, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		r, err := strconv.ParseFloat(part, 64)
		if err != nil || r <= 0 || r > 5000 {
			return ko, fmt.Errorf("--churn-rates: %q is not a rate between 0 and 5000 per second", part)
		}
		ko.rates = append(ko.rates, r)
	}
	if k.churnDuration <= 0 || k.churnDrain <= 0 {
		return ko, errors.New("--churn-duration and --churn-drain must be positive")
	}
	ko.duration, ko.drain = k.churnDuration, k.churnDrain
	return ko, nil
}

// kubeResult is one Kubernetes-mode case.
type kubeResult struct {
	Case   benchCase `json:"case"`
	Server string    `json:"server"` // "pilot" or "pilot-delta"
	// CreateSeconds is how long writing the workload into the API server
	// took (Objects objects), before pilot-discovery started.
	CreateSeconds float64 `json:"create_seconds"`
	Objects       int     `json:"objects"`
	// SyncSeconds is from pilot-discovery's start to the last of its
	// informers (Services, EndpointSlices and Pods; Istio config) having
	// synced; FirstPushSeconds to its first push being computed (ready).
	SyncSeconds      float64 `json:"sync_seconds"`
	FirstPushSeconds float64 `json:"first_push_seconds"`
	// Cold is every gateway's convergence from the moment they connect
	// (after the first push).
	Cold *load.Latency `json:"cold,omitempty"`
	// usage is the server's peak RSS and CPU seconds once every gateway
	// has converged (start, sync, first push and cold convergence).
	usage
	Churn  []churnResult `json:"churn,omitempty"`
	Report *load.Report  `json:"report,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// runKubeMode is bench --kube: every case, results written after each.
func runKubeMode(o options, kf *kubeFlags) error {
	ko, err := kf.parse()
	if err != nil {
		return err
	}
	bins, err := apiserver.FindBinaries(apiserver.Binaries{})
	if err != nil {
		return err
	}
	if err := prepareOut(&o); err != nil {
		return err
	}
	if len(ko.routes.cases) > 0 && ko.routes.floorRuns > 0 && o.floor == "" && !o.skipFloor {
		o.floor = filepath.Join(o.out, "bin", "floor")
		if err := goBuild(o.floor, "./tools/floor"); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now().UTC()
	var results []kubeResult
	for _, c := range ko.cases {
		churn := slices.Contains(ko.churnCases, c)
		r := runKubeCase(ctx, o, ko, bins, c, churn, o.delta)
		logKubeResult(r)
		results = append(results, r)
		if err := writeKubeResults(o, ko, started, results); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(ko.cases) > 0 {
		fmt.Println("wrote", filepath.Join(o.out, "kube-results.md"))
	}
	if len(ko.routes.cases) == 0 {
		return nil
	}
	var routes []routeResult
	for _, c := range ko.routes.cases {
		dumps := filepath.Join(o.out, "dumps", "routes-"+c.String())
		_ = os.RemoveAll(dumps)
		r := runRouteCase(ctx, o, ko.routes, bins, c, o.delta, dumps)
		// The floor runs once pilot-discovery, etcd and the API server
		// are gone, on the machine alone as in file mode.
		if r.Error == "" && ko.routes.floorRuns > 0 && !o.skipFloor && ctx.Err() == nil {
			r.Floor = runRouteFloor(ctx, o, c, dumps, o.delta, ko.routes.floorRuns)
		}
		logRouteResult(r)
		routes = append(routes, r)
		m := machineInfo(o.note, o.commit, o.load, started)
		if err := writeReport(o.out, "route-results", m, routes, routeMarkdown(m, ko.routes, o.pilotArgs, routes)); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	fmt.Println("wrote", filepath.Join(o.out, "route-results.md"))
	return nil
}

// runKubeCase measures one case on a fresh cluster.
func runKubeCase(ctx context.Context, o options, ko kubeOptions, bins apiserver.Binaries, c benchCase, churn, delta bool) kubeResult {
	res := kubeResult{Case: c, Server: "pilot"}
	if delta {
		res.Server = "pilot-delta"
	}
	cl, err := apiserver.New(apiserver.Options{Binaries: bins})
	if err != nil {
		res.Error = "starting etcd and kube-apiserver: " + err.Error()
		return res
	}
	defer cl.Stop()
	cfg := cl.RESTConfig()
	// No client-side throttling: the creates and the churn are the load.
	cfg.QPS, cfg.Burst = -1, 0
	t0 := time.Now()
	if err := workload.WriteKube(ctx, cfg, workload.KubeOptions{Options: workload.Options{Services: c.Services}}); err != nil {
		res.Error = err.Error()
		return res
	}
	res.CreateSeconds = time.Since(t0).Seconds()
	res.Objects = 1 + 4*c.Services

	p, err := startKubePilot(ctx, o, cl.Kubeconfig, fmt.Sprintf("kube-%s-%s.log", c, res.Server))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	grpcAddr, httpAddr := p.grpcAddr, p.httpAddr
	res.SyncSeconds, res.FirstPushSeconds = p.syncSeconds, p.firstPushSeconds

	kc, err := newChurner(cfg, c, ko)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	lo := load.Options{
		Address: grpcAddr, Gateways: c.Gateways, Delta: delta, Timeout: o.timeout + time.Duration(len(ko.rates))*(ko.duration+ko.drain),
		Validate: true, Logger: slog.New(slog.DiscardHandler),
		EndpointMarker: workload.MarkerID, OnEndpointMarker: kc.ack,
		Hold: func(ctx context.Context) error {
			u, err := p.usage()
			if err != nil {
				return err
			}
			res.usage = u
			if !churn {
				return nil
			}
			for _, rate := range ko.rates {
				res.Churn = append(res.Churn, kc.phase(ctx, p.proc, "http://"+httpAddr+"/metrics", rate))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			return nil
		},
	}
	rep, err := load.Run(ctx, lo)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Report = rep
	cold := rep.Cold
	res.Cold = &cold
	switch {
	case rep.Unimplemented:
		res.Error = "the server answered Unimplemented for " + rep.Mode + " ADS"
	case rep.TimedOut:
		res.Error = "timed out"
	case res.PeakRSSBytes == 0:
		res.Error = "the gateways did not converge"
	}
	return res
}

// kubePilot is pilot-discovery running in Kubernetes mode against a
// case's API server, ready and past its first push.
type kubePilot struct {
	*proc
	grpcAddr, httpAddr, logPath string
	// syncSeconds (informers synced) and firstPushSeconds time its start.
	syncSeconds, firstPushSeconds float64
}

// startKubePilot starts pilot-discovery on kubeconfig with free ports,
// plaintext ADS and JSON logs into o.out/logs/logName, extra flags then
// o.pilotArgs, and waits (o.timeout at most) until it is ready and its
// log says the first push was computed. The caller stops it.
func startKubePilot(ctx context.Context, o options, kubeconfig, logName string, extra ...string) (*kubePilot, error) {
	grpcAddr, err1 := freePort()
	httpAddr, err2 := freePort()
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	args := append([]string{"discovery", "--kubeconfig", kubeconfig, "--grpc-addr", grpcAddr, "--http-addr", httpAddr,
		"--secure-grpc-addr=", "--log-format", "json", "--log-level", "info"}, extra...)
	args = append(args, o.pilotArgs...)
	logPath := filepath.Join(o.out, "logs", logName)
	w := newLogWatch(servicesSynced, configSynced, firstPush)
	p, err := startProc(o.pilot, args, logPath, w)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := p.waitReady(rctx, "http://"+httpAddr+"/healthz/ready"); err != nil {
		p.stop()
		return nil, err
	}
	// Ready can answer before the log line carrying the same news has
	// come through the pipe; wait for the line, not for a guess.
	if err := w.wait(rctx, firstPush); err != nil {
		p.stop()
		return nil, fmt.Errorf("%v (see %s)", err, logPath)
	}
	return &kubePilot{proc: p, grpcAddr: grpcAddr, httpAddr: httpAddr, logPath: logPath,
		syncSeconds:      max(w.at(servicesSynced), w.at(configSynced)).Seconds(),
		firstPushSeconds: w.at(firstPush).Seconds()}, nil
}

// Log messages of pilot-discovery that time its start.
const (
	servicesSynced = "kubernetes services synced"
	configSynced   = "kubernetes config synced"
	firstPush      = "config synced and first push computed"
)

// logWatch is an io.Writer over pilot-discovery's JSON log that notes when
// each wanted message first appears, measured from its creation (just
// before the process starts).
type logWatch struct {
	start time.Time
	want  []string
	mu    sync.Mutex
	buf   []byte
	seen  map[string]time.Duration
	// changed is closed and replaced whenever a wanted message is first seen.
	changed chan struct{}
}

func newLogWatch(msgs ...string) *logWatch {
	return &logWatch{start: time.Now(), want: msgs, seen: map[string]time.Duration{}, changed: make(chan struct{})}
}

func (w *logWatch) Write(b []byte) (int, error) {
	now := time.Since(w.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		for _, m := range w.want {
			if _, ok := w.seen[m]; !ok && strings.Contains(line, `"msg":"`+m+`"`) {
				w.seen[m] = now
				close(w.changed)
				w.changed = make(chan struct{})
			}
		}
	}
	if len(w.buf) > 1<<20 { // a line that never ends is not one we want
		w.buf = w.buf[:0]
	}
	return len(b), nil
}

// wait returns once msg has been logged, or with an error naming it when
// ctx ends first.
func (w *logWatch) wait(ctx context.Context, msg string) error {
	for {
		w.mu.Lock()
		_, ok := w.seen[msg]
		ch := w.changed
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("log line %q not seen: %w", msg, ctx.Err())
		}
	}
}

// at is when msg was logged, 0 if it was not.
func (w *logWatch) at(msg string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[msg]
}

// currentRSS reads the process's resident set size now (VmRSS).
func (p *proc) currentRSS() (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

func logKubeResult(r kubeResult) {
	msg := fmt.Sprintf("kube %-8s %-11s sync=%.1fs first-push=%.1fs rss=%.0fMB cpu=%.1fs", r.Case, r.Server,
		r.SyncSeconds, r.FirstPushSeconds, float64(r.PeakRSSBytes)/(1<<20), r.CPUSeconds)
	if r.Cold != nil {
		msg += fmt.Sprintf(" cold p99=%.0fms (%d/%d)", r.Cold.P99Ms, r.Cold.Converged, r.Cold.Total)
	}
	for _, c := range r.Churn {
		msg += fmt.Sprintf(" | churn %g/s: %d changes, all-gateways p50=%.0fms p99=%.0fms, cpu/change=%.2fms, rss %+.1f%%",
			c.Rate, c.Changes, c.AllP50Ms, c.AllP99Ms, c.CPUPerChangeMs, c.RSSGrowthPct)
	}
	if r.Error != "" {
		msg += " error: " + r.Error
	}
	fmt.Fprintln(os.Stderr, msg)
}

func writeKubeResults(o options, ko kubeOptions, started time.Time, results []kubeResult) error {
	m := machineInfo(o.note, o.commit, o.load, started)
	return writeReport(o.out, "kube-results", m, results, kubeMarkdown(m, ko, o.pilotArgs, results))
}
