package main

// Route propagation at scale in Kubernetes mode, the gateway-api-bench
// cases (--route-cases): per case a fresh etcd and kube-apiserver, the
// Gateway API workload (routes_workload.go) created in it, pilot-discovery
// in Kubernetes mode, and P simulated proxies of the Gateway (labelled
// gateway.networking.k8s.io/gateway-name: bench, in its namespace, on the
// plaintext ADS port, which authenticates nobody). Once every proxy has
// converged, two phases of numbered changes, one at a time: a new
// HTTPRoute created ("create"), then an existing route's path changed
// ("update"). Change K writes the path "/wfmark-K", and the load tool
// reports when each proxy ACKs a route table carrying it
// (Options.RouteMarker); a change's latency runs from the start of its API
// write to the last proxy's ACK, and the next change starts then. Server
// CPU and RSS are read around each phase.
//
// Before the phases, one change through the load tool's trigger (a route
// with the path "/wfwarm") captures proxy 0's responses before and after
// it; the floor server then serves that capture to the same number of
// proxies and sends the same route table change with no translation at
// all: its figures stand beside pilot-discovery's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

// routeCase is one route-propagation case: Routes HTTPRoutes on the
// Gateway, or with ListenerSets, that many ListenerSets of Routes routes
// each; Proxies simulated proxies of the Gateway.
type routeCase struct {
	Routes       int `json:"routes"`
	ListenerSets int `json:"listener_sets,omitempty"`
	Proxies      int `json:"proxies"`
}

// String is the case as --route-cases spells it: hrROUTESxPROXIES or
// lsSETSxROUTESxPROXIES.
func (c routeCase) String() string {
	if c.ListenerSets > 0 {
		return fmt.Sprintf("ls%dx%dx%d", c.ListenerSets, c.Routes, c.Proxies)
	}
	return fmt.Sprintf("hr%dx%d", c.Routes, c.Proxies)
}

// label is the case in the result tables.
func (c routeCase) label() string {
	if c.ListenerSets > 0 {
		return fmt.Sprintf("%d ListenerSets x %d routes, %d proxies", c.ListenerSets, c.Routes, c.Proxies)
	}
	return fmt.Sprintf("%d HTTPRoutes, %d proxies", c.Routes, c.Proxies)
}

func (c routeCase) totalRoutes() int {
	if c.ListenerSets > 0 {
		return c.ListenerSets * c.Routes
	}
	return c.Routes
}

// The gateway-api-bench cases, `make bench-kube`'s default.
const defaultRouteCases = "hr5000x100,hr5000x500,ls2500x16x100,ls2500x16x500"

// parseRouteCases reads "hr5000x100,ls2500x16x500,..."; empty is none.
func parseRouteCases(s string) ([]routeCase, error) {
	var out []routeCase
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		bad := fmt.Errorf("route case %q: want hrROUTESxPROXIES or lsLISTENERSETSxROUTESxPROXIES, e.g. hr5000x100 or ls2500x16x100", part)
		var nums []string
		var c routeCase
		switch {
		case strings.HasPrefix(part, "hr"):
			nums = strings.Split(part[2:], "x")
			if len(nums) != 2 {
				return nil, bad
			}
		case strings.HasPrefix(part, "ls"):
			nums = strings.Split(part[2:], "x")
			if len(nums) != 3 {
				return nil, bad
			}
		default:
			return nil, bad
		}
		v := make([]int, len(nums))
		for i, n := range nums {
			var err error
			if v[i], err = atoi(n); err != nil || v[i] < 1 {
				return nil, bad
			}
		}
		if len(v) == 2 {
			c = routeCase{Routes: v[0], Proxies: v[1]}
		} else {
			c = routeCase{ListenerSets: v[0], Routes: v[1], Proxies: v[2]}
		}
		out = append(out, c)
	}
	return out, nil
}

// routeOptions are the route-propagation settings (--route-*).
type routeOptions struct {
	cases   []routeCase
	changes int
	// timeout bounds each change's wait for every proxy.
	timeout time.Duration
	// gap is the pause after a change reached every proxy before the next
	// is made: pilot-discovery pushes a change that follows a quiet spell
	// (--debounce-after) after --debounce-first, and one within it (a
	// burst) after the full --debounce-after.
	gap       time.Duration
	floorRuns int
	// profile, if set, is where pilot-discovery's CPU profile over the
	// update phase is written (PROFILE-CASE.pprof).
	profile string
}

// Paths of the changes.
const (
	// warmPath is the trigger's route; the Gateway API PathPrefix
	// "/wfwarm" reaches Envoy as the prefix "/wfwarm/", the load tool's
	// update prefix.
	warmPath   = "/wfwarm"
	warmPrefix = warmPath + "/"
)

// routePhase is one phase of changes with the server's usage over it.
type routePhase struct {
	Name string `json:"name"` // "create" or "update"
	propSummary
	// CPUSeconds is the server's CPU over the phase, CPUPerChangeMs per
	// change; RSS is read at its start and end, the Go heap in use too.
	CPUSeconds     float64 `json:"cpu_seconds"`
	CPUPerChangeMs float64 `json:"cpu_per_change_ms"`
	RSSStartBytes  int64   `json:"rss_start_bytes"`
	RSSEndBytes    int64   `json:"rss_end_bytes"`
	HeapStartBytes int64   `json:"heap_start_bytes,omitempty"`
	HeapEndBytes   int64   `json:"heap_end_bytes,omitempty"`
	// Server is pilot-discovery's pushes, push compute time and
	// translations over the phase (/metrics): with CPU per change, it says
	// whether the time went to computing pushes or elsewhere.
	Server *counters `json:"server,omitempty"`
	// LoadCPUSeconds is the bench's own CPU over the phase: the simulated
	// proxies decode and validate each new route table once (the first
	// proxy to get it waits for that), then ACK it.
	LoadCPUSeconds float64  `json:"load_cpu_seconds"`
	Errors         []string `json:"errors,omitempty"`
}

// routeFloor is the floor server's figures for the same route table
// change: the median over its runs.
type routeFloor struct {
	Runs int `json:"runs"`
	// AllMs is from the update to the last proxy's ACK (the every-proxy
	// latency of its one change), CPU the floor's for sending it.
	AllMs          float64 `json:"all_ms"`
	CPUPerChangeMs float64 `json:"cpu_per_change_ms"`
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`
	Error          string  `json:"error,omitempty"`
}

// routeResult is one route-propagation case.
type routeResult struct {
	Case   routeCase `json:"case"`
	Server string    `json:"server"`
	// Objects were created in CreateSeconds before pilot-discovery started.
	Objects          int           `json:"objects"`
	CreateSeconds    float64       `json:"create_seconds"`
	SyncSeconds      float64       `json:"sync_seconds"`
	FirstPushSeconds float64       `json:"first_push_seconds"`
	Cold             *load.Latency `json:"cold,omitempty"`
	// usage is the server's peak RSS and CPU once every proxy converged.
	usage
	// BytesPerProxy is what each proxy received over the whole run, on
	// average.
	BytesPerProxy float64      `json:"bytes_per_proxy"`
	Phases        []routePhase `json:"phases,omitempty"`
	Floor         *routeFloor  `json:"floor,omitempty"`
	Profile       string       `json:"profile,omitempty"`
	NACKs         int64        `json:"nacks"`
	Error         string       `json:"error,omitempty"`
}

// routeTableBytesPerRoute is about what one route adds to the Gateway's
// route configuration (a virtual host of two routes: measured 800 bytes
// at 1,000 and 2,000 routes).
const routeTableBytesPerRoute = 800

// tooBigForMemory says why a case cannot run on a machine of memGB: every
// proxy receives the whole route configuration on every change, and the
// load tool holds each proxy's copy while it arrives, so a change needs
// about routes x 800 B x proxies at once. Empty when it fits in half the
// memory.
func tooBigForMemory(c routeCase, memGB float64) string {
	need := float64(c.totalRoutes()) * routeTableBytesPerRoute * float64(c.Proxies)
	if memGB <= 0 || need <= memGB*(1<<30)/2 {
		return ""
	}
	return fmt.Sprintf("not run: every change sends the whole route configuration (about %.0f MB at %d routes) to each of %d proxies, "+
		"%.1f GB that the load tool would hold at once, more than half of this machine's %.1f GB", float64(c.totalRoutes())*routeTableBytesPerRoute/(1<<20),
		c.totalRoutes(), c.Proxies, need/(1<<30), memGB)
}

// runRouteCase measures one case on a fresh cluster; dumps receives
// proxy 0's capture for the floor.
func runRouteCase(ctx context.Context, o options, ro routeOptions, bins apiserver.Binaries, c routeCase, delta bool, dumps string) routeResult {
	res := routeResult{Case: c, Server: "pilot"}
	if delta {
		res.Server = "pilot-delta"
	}
	if why := tooBigForMemory(c, machineInfo("", "", "", time.Now()).MemoryGB); why != "" {
		res.Error = why
		return res
	}
	cl, err := apiserver.New(apiserver.Options{Binaries: bins})
	if err != nil {
		res.Error = "starting etcd and kube-apiserver: " + err.Error()
		return res
	}
	defer cl.Stop()
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	kc, err1 := kubernetes.NewForConfig(cfg)
	gc, err2 := gwclient.NewForConfig(cfg)
	if err := errors.Join(err1, err2); err != nil {
		res.Error = err.Error()
		return res
	}
	t0 := time.Now()
	res.Objects, err = writeRouteWorkload(ctx, kc, gc, c, 32)
	res.CreateSeconds = time.Since(t0).Seconds()
	if err != nil {
		if c.ListenerSets > 0 && apierrors.IsNotFound(err) && strings.Contains(err.Error(), "ListenerSet") {
			err = fmt.Errorf("%w (the API server does not serve listenersets.gateway.networking.k8s.io: its CRD is not in manifests/crds/gateway-api)", err)
		}
		res.Error = err.Error()
		return res
	}

	var extra []string
	if ro.profile != "" {
		extra = []string{"--debug-admin-service-accounts", routeNamespace + "/" + profilerAccount}
	}
	p, err := startKubePilot(ctx, o, cl.Kubeconfig, fmt.Sprintf("routes-%s-%s.log", c, res.Server), extra...)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	grpcAddr, httpAddr := p.grpcAddr, p.httpAddr
	res.SyncSeconds, res.FirstPushSeconds = p.syncSeconds, p.firstPushSeconds

	tr := newPropTracker(c.Proxies, 2*ro.changes)
	cw := &routeChanger{gc: gc, c: c, tr: tr, timeout: ro.timeout, gap: ro.gap}
	// The warm change is the load tool's update, which it would wait for
	// until its whole timeout: a change that never arrives (a kind the
	// server does not convert) ends the run after one change's timeout.
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var warmLate atomic.Bool
	var holding atomic.Bool
	metricsURL := "http://" + httpAddr + "/metrics"
	lo := load.Options{
		Address: grpcAddr, Gateways: c.Proxies, Delta: delta, Validate: true, Logger: slog.New(slog.DiscardHandler),
		Labels: map[string]string{routeProxyLabel: routeGateway}, Namespace: routeNamespace,
		Timeout: o.timeout + time.Duration(2*ro.changes)*ro.timeout, DumpDir: dumps,
		RouteMarker: markerID, OnRouteMarker: tr.ack,
		UpdatePrefix: warmPrefix,
		Converged: func(context.Context) {
			if u, err := p.usage(); err == nil {
				res.usage = u
			}
		},
		Trigger: func(ctx context.Context) error {
			time.AfterFunc(ro.timeout, func() {
				if !holding.Load() {
					warmLate.Store(true)
					cancelRun()
				}
			})
			return cw.create(ctx, "warm", 0, warmPath)
		},
		Hold: func(ctx context.Context) error {
			holding.Store(true)
			var prof *profileFetch
			for i, name := range []string{"create", "update"} {
				if name == "update" && ro.profile != "" {
					prof = startProfile(ctx, kc, "http://"+httpAddr, ro, c)
				}
				res.Phases = append(res.Phases, cw.phase(ctx, p.proc, metricsURL, name, i*ro.changes, ro.changes))
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			if prof != nil {
				path, perr := prof.wait()
				res.Profile = path
				if perr != nil {
					res.Phases[len(res.Phases)-1].Errors = append(res.Phases[len(res.Phases)-1].Errors, "profile: "+perr.Error())
				}
			}
			return nil
		},
	}
	rep, err := load.Run(runCtx, lo)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if warmLate.Load() {
		res.Error = fmt.Sprintf("the first new HTTPRoute did not reach every proxy within %s (see %s)", ro.timeout, p.logPath)
		return res
	}
	cold := rep.Cold
	res.Cold, res.NACKs, res.BytesPerProxy = &cold, rep.NACKs, rep.BytesPerProxy.Mean
	switch {
	case rep.Unimplemented:
		res.Error = "the server answered Unimplemented for " + rep.Mode + " ADS"
	case rep.TimedOut:
		res.Error = "timed out"
	case res.PeakRSSBytes == 0:
		res.Error = "the proxies did not converge"
	case len(rep.NACKSamples) > 0:
		res.Error = "NACKs: " + strings.Join(rep.NACKSamples, "; ")
	case len(rep.ErrorSamples) > 0 && len(res.Phases) < 2:
		res.Error = strings.Join(rep.ErrorSamples, "; ")
	}
	return res
}

// routeChanger makes the numbered changes.
type routeChanger struct {
	gc      gwclient.Interface
	c       routeCase
	tr      *propTracker
	timeout time.Duration
	gap     time.Duration
	failed  []bool
}

// create creates a new HTTPRoute "new-NAME" with the given path, on the
// Gateway (on the HTTPRoute case) or on ListenerSet n mod the case's.
func (cw *routeChanger) create(ctx context.Context, name string, n int, path string) error {
	host := "new-" + name + ".bench.example"
	if cw.c.ListenerSets > 0 {
		host = fmt.Sprintf("n-%s.ls-%d.bench.example", name, n%cw.c.ListenerSets)
	}
	r := httpRoute(cw.c, "new-"+name, host, path, 0)
	if _, err := cw.gc.GatewayV1().HTTPRoutes(routeNamespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("HTTPRoute %s/%s: %w", routeNamespace, r.Name, err)
	}
	return nil
}

// update sets route i's path (its one rule, whole) with a merge patch,
// which needs no read first.
func (cw *routeChanger) update(ctx context.Context, i int, path string) error {
	r := httpRoute(cw.c, fmt.Sprintf("route-%d", i), routeHostname(cw.c, i), path, i%routeBackends(cw.c))
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rules": r.Spec.Rules}})
	if err != nil {
		return err
	}
	if _, err := cw.gc.GatewayV1().HTTPRoutes(routeNamespace).Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("HTTPRoute %s/%s: %w", routeNamespace, r.Name, err)
	}
	return nil
}

// changeRoute is the existing route the update phase's n-th change edits:
// spread over the routes, a different one each time.
func changeRoute(n, total int) int { return (n*7919 + 1) % total }

// phase makes changes first..first+n-1 one at a time, each once the one
// before reached every proxy (or its timeout passed).
func (cw *routeChanger) phase(ctx context.Context, p *proc, metricsURL, name string, first, n int) routePhase {
	ph := routePhase{Name: name}
	if len(cw.failed) < first+n {
		cw.failed = append(cw.failed, make([]bool, first+n-len(cw.failed))...)
	}
	u0, err0 := p.usage()
	rss0, err1 := p.currentRSS()
	self0, _ := selfCPUSeconds()
	m0, err2 := scrapeMetrics(ctx, metricsURL)
	if err := firstErr(err0, err1, err2); err != nil {
		ph.Errors = append(ph.Errors, "reading server usage: "+err.Error())
	}
	done := first
	for k := first; k < first+n && ctx.Err() == nil; k++ {
		done = k + 1
		cw.tr.writing(k)
		var err error
		if name == "create" {
			err = cw.create(ctx, fmt.Sprint(k), k, markerPath(k))
		} else {
			err = cw.update(ctx, changeRoute(k-first, cw.c.totalRoutes()), markerPath(k))
		}
		cw.tr.written(k)
		if err != nil {
			cw.failed[k] = true
			if len(ph.Errors) < 5 {
				ph.Errors = append(ph.Errors, fmt.Sprintf("change %d: %v", k, err))
			}
			continue
		}
		if !cw.tr.wait(ctx, k, cw.timeout) && len(ph.Errors) < 5 {
			ph.Errors = append(ph.Errors, fmt.Sprintf("change %d: not at every proxy after %s", k, cw.timeout))
		}
		if cw.gap > 0 && k+1 < first+n {
			select {
			case <-time.After(cw.gap):
			case <-ctx.Done():
			}
		}
	}
	u1, err0 := p.usage()
	rss1, err1 := p.currentRSS()
	self1, _ := selfCPUSeconds()
	m1, err2 := scrapeMetrics(ctx, metricsURL)
	if err := firstErr(err0, err1, err2); err != nil {
		ph.Errors = append(ph.Errors, "reading server usage: "+err.Error())
	}
	if m0 != nil && m1 != nil {
		c0, c1 := countersAt(m0), countersAt(m1)
		ph.Server = c1.since(c0)
		ph.HeapStartBytes, ph.HeapEndBytes = c0.HeapInuseBytes, c1.HeapInuseBytes
	}
	ph.propSummary = cw.tr.summarize(first, done, func(k int) bool { return cw.failed[k] })
	ph.CPUSeconds = round2(u1.CPUSeconds - u0.CPUSeconds)
	ph.LoadCPUSeconds = round2(self1 - self0)
	if ph.Changes > 0 {
		ph.CPUPerChangeMs = round2(ph.CPUSeconds * 1000 / float64(ph.Changes))
	}
	ph.RSSStartBytes, ph.RSSEndBytes = rss0, rss1
	return ph
}

// profilerAccount is the ServiceAccount whose token reads
// pilot-discovery's /debug/pprof (given to it as a debug admin).
const profilerAccount = "wayfinder-bench-profiler"

// profileSeconds is how long the update phase's CPU profile runs.
const profileSeconds = 20

// profileFetch is a CPU profile being taken over /debug/pprof/profile.
type profileFetch struct {
	path string
	done chan error
}

// startProfile starts a CPU profile of pilot-discovery; wait returns the
// file it was written to.
func startProfile(ctx context.Context, kc kubernetes.Interface, base string, ro routeOptions, c routeCase) *profileFetch {
	f := &profileFetch{path: fmt.Sprintf("%s-%s.pprof", ro.profile, c), done: make(chan error, 1)}
	go func() { f.done <- f.fetch(ctx, kc, base) }()
	return f
}

func (f *profileFetch) fetch(ctx context.Context, kc kubernetes.Interface, base string) error {
	if _, err := kc.CoreV1().ServiceAccounts(routeNamespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: routeNamespace, Name: profilerAccount}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	expiry := int64(3600)
	tok, err := kc.CoreV1().ServiceAccounts(routeNamespace).CreateToken(ctx, profilerAccount,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", routeNamespace, profilerAccount, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, profileSeconds), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET /debug/pprof/profile: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	out, err := os.Create(f.path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (f *profileFetch) wait() (string, error) {
	if err := <-f.done; err != nil {
		return "", err
	}
	return f.path, nil
}

// runRouteFloor serves proxy 0's capture (dumps) from the floor server
// to the case's proxies, runs times, and sends the captured route table
// change each time.
func runRouteFloor(ctx context.Context, o options, c routeCase, dumps string, delta bool, runs int) *routeFloor {
	fl := &routeFloor{}
	if _, err := os.Stat(filepath.Join(dumps, "update")); err != nil {
		fl.Error = "no capture of pilot-discovery's responses (its run did not converge)"
		return fl
	}
	var all []result
	for range runs {
		res := result{Case: benchCase{Services: c.totalRoutes(), Gateways: c.Proxies}, Server: "floor"}
		grpcAddr, err1 := freePort()
		httpAddr, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			fl.Error = err.Error()
			return fl
		}
		args := []string{"--dump-dir", dumps, "--grpc-addr", grpcAddr, "--http-addr", httpAddr}
		if delta {
			args = append(args, "--delta")
		}
		r := measure(ctx, o, res, o.floor, args, "http://"+httpAddr+"/healthz/ready", "", load.Options{
			Address: grpcAddr, Gateways: c.Proxies, Delta: delta, UpdatePrefix: warmPrefix,
			Trigger: func(ctx context.Context) error { return postUpdate(ctx, "http://"+httpAddr+"/update") },
		})
		if r.Error != "" {
			fl.Error = r.Error
			return fl
		}
		all = append(all, r)
		if ctx.Err() != nil {
			break
		}
	}
	if len(all) == 0 {
		fl.Error = "no floor run"
		return fl
	}
	fl.Runs = len(all)
	fl.AllMs = round2(median(all, func(r result) float64 { return r.Report.Update.MaxMs }))
	fl.CPUPerChangeMs = round2(1000 * median(all, func(r result) float64 { return r.UpdateCPUSeconds }))
	fl.PeakRSSBytes = int64(median(all, func(r result) float64 { return float64(r.PeakRSSBytes) }))
	return fl
}
