package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// Options configure a run.
type Options struct {
	// Address is the ADS server's host:port (loopback).
	Address string
	// Gateways is P, the number of simulated gateways.
	Gateways int
	// Delta speaks delta xDS (DeltaAggregatedResources) instead of state
	// of the world.
	Delta bool
	// Timeout bounds the whole run; zero means 5 minutes.
	Timeout time.Duration
	// Trigger, if set, is called once every gateway has converged cold; it
	// makes the update (rewrites a VirtualService, asks the floor to switch).
	// The update phase then waits for every gateway to ACK a route
	// configuration containing UpdatePrefix.
	Trigger      func(ctx context.Context) error
	UpdatePrefix string
	// Converged, if set, is called once every gateway has converged cold,
	// before the update's clock starts and Trigger is called: the bench
	// reads the server's counters there, between the two phases, without
	// adding to the update's latency.
	Converged func(ctx context.Context)
	// Validate runs the resources' ValidateAll, once per distinct content,
	// and NACKs what fails, like Envoy.
	Validate bool
	// EagerLDS requests LDS with CDS instead of after the endpoints warmed.
	EagerLDS bool
	// DumpDir, if set, receives gateway 0's last ACKed response of each
	// type as serialized DiscoveryResponses (DeltaDiscoveryResponses with
	// Delta): in DumpDir/cold after cold convergence, DumpDir/update after
	// the update. The floor server serves these.
	DumpDir string
	// BackoffBase and BackoffMax are the reconnect backoff: a failed stream
	// is retried after a random delay below min(BackoffMax, BackoffBase*2^n)
	// for the n-th consecutive failure. Zero means Envoy's 500ms and 30s.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Labels are the gateways' pod labels; nil means istio=ingressgateway.
	Labels map[string]string
	// Namespace of the gateways' pods; empty means istio-system.
	Namespace string
	Logger    *slog.Logger
	// Stuck opens this many more gateways that never read (see openStuck)
	// before the measured ones start; they stay until the run ends.
	Stuck int
	// Hold, if set, is called after cold convergence (and the update, if
	// Trigger is set) with every gateway still connected and following
	// pushes; the run ends when it returns. An error is counted with the
	// run's errors. The Kubernetes-mode bench churns endpoints in it.
	Hold func(ctx context.Context) error
	// EndpointMarker, if set, picks marker endpoints out of EDS responses:
	// addresses a benchmark wrote to time a change, mapped to an id. It is
	// called once per distinct response content, from any goroutine.
	EndpointMarker func(addr string) (id int, ok bool)
	// OnEndpointMarker, if set with EndpointMarker, is called on gateway
	// gw's goroutine whenever it ACKs an EDS response, once per marker id
	// in it (markers already seen come again in state-of-the-world
	// responses; the callee keeps track).
	OnEndpointMarker func(gw, id int)
	// RouteMarker, if set, picks marker paths out of RDS responses: route
	// paths (prefix or exact) a benchmark wrote to time a route change,
	// mapped to an id. It is called once per distinct response content,
	// from any goroutine.
	RouteMarker func(path string) (id int, ok bool)
	// OnRouteMarker, if set with RouteMarker, is called on gateway gw's
	// goroutine whenever it ACKs an RDS response, once per marker id in
	// it (every marker of the route configurations it carries, so seen
	// ones come again; the callee keeps track).
	OnRouteMarker func(gw, id int)
}

// Dump file names per type, shared with the floor server.
var DumpFiles = map[string]string{
	resource.ClusterType:  "cds.pb",
	resource.EndpointType: "eds.pb",
	resource.ListenerType: "lds.pb",
	resource.RouteType:    "rds.pb",
}

// typeOrder is Envoy's order of the ADS types.
var typeOrder = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType}

func (o Options) withDefaults() (Options, error) {
	if o.Address == "" {
		return o, errors.New("load: Address is required")
	}
	if o.Gateways < 1 {
		return o, fmt.Errorf("load: Gateways must be at least 1, got %d", o.Gateways)
	}
	if o.Trigger != nil && o.UpdatePrefix == "" {
		return o, errors.New("load: UpdatePrefix is required with Trigger")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 500 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 30 * time.Second
	}
	if o.Labels == nil {
		o.Labels = map[string]string{"istio": "ingressgateway"}
	}
	if o.Namespace == "" {
		o.Namespace = "istio-system"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// runner is one run's shared state.
type runner struct {
	opts  Options
	cache *parseCache
	start time.Time

	// triggerAt is the update trigger's time in ns since start, 0 before.
	triggerAt atomic.Int64

	coldLeft, updateLeft atomic.Int64
	coldDone, updateDone chan struct{}
	fatal                chan struct{}
	fatalOnce            sync.Once

	responses, nacks, errs, reconnects atomic.Int64
	unimplemented                      atomic.Bool

	mu         sync.Mutex
	errSamples []string
	nackSample []string
}

const maxSamples = 5

func (r *runner) errorf(format string, args ...any) {
	r.errs.Add(1)
	msg := fmt.Sprintf(format, args...)
	r.opts.Logger.Debug("load: error", "err", msg)
	r.mu.Lock()
	if len(r.errSamples) < maxSamples {
		r.errSamples = append(r.errSamples, msg)
	}
	r.mu.Unlock()
}

func (r *runner) nack(gw int, typeURL string, err error) {
	r.nacks.Add(1)
	r.mu.Lock()
	if len(r.nackSample) < maxSamples {
		r.nackSample = append(r.nackSample, fmt.Sprintf("gateway %d %s: %v", gw, adsc.ShortName(typeURL), err))
	}
	r.mu.Unlock()
}

// stop ends the run early (the server cannot serve this mode).
func (r *runner) stop() { r.fatalOnce.Do(func() { close(r.fatal) }) }

func (r *runner) since() time.Duration { return time.Since(r.start) }

func countDown(left *atomic.Int64, done chan struct{}) {
	if left.Add(-1) == 0 {
		close(done)
	}
}

// Run simulates the gateways until they converged (and converged again
// after the trigger), the timeout passed, or ctx ended. A run that timed
// out still returns its Report, with TimedOut set; the error is for runs
// that could not be measured at all.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &runner{
		opts:       opts,
		cache:      newParseCache(opts.Validate),
		coldDone:   make(chan struct{}),
		updateDone: make(chan struct{}),
		fatal:      make(chan struct{}),
	}
	r.cache.marker = opts.EndpointMarker
	r.cache.routeMarker = opts.RouteMarker
	r.coldLeft.Store(int64(opts.Gateways))
	r.updateLeft.Store(int64(opts.Gateways))

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	gctx, stopGateways := context.WithCancel(ctx)
	defer stopGateways()

	if opts.Stuck > 0 {
		closeStuck, err := r.openStuck(gctx, opts.Stuck)
		if err != nil {
			return nil, err
		}
		defer closeStuck()
	}

	gws := make([]*gateway, opts.Gateways)
	for i := range gws {
		conn, err := grpc.NewClient("passthrough:///"+opts.Address,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)),
			// Fixed 1 MiB windows (no BDP growth). Envoy's are 256 MiB, but
			// each Envoy has its own machine: here 500 gateways share one
			// process, and large windows let a server pour every gateway's
			// config into it at once (6 GB at 5,000 x 500), so page faults
			// in the load tool set the pace. 1 MiB still fills a loopback
			// connection; measured, it made runs faster and steadier against
			// both servers.
			grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20))
		if err != nil {
			for _, g := range gws[:i] {
				_ = g.conn.Close()
			}
			return nil, fmt.Errorf("load: %w", err)
		}
		gws[i] = newGateway(r, i, conn, r.node(i))
	}

	r.start = time.Now()
	var wg sync.WaitGroup
	for _, g := range gws {
		wg.Go(func() { g.run(gctx) })
	}

	rep := &Report{Mode: "sotw", Address: opts.Address, Gateways: opts.Gateways}
	if opts.Delta {
		rep.Mode = "delta"
	}
	ok := r.await(ctx, r.coldDone)
	if ok && opts.Converged != nil {
		opts.Converged(ctx)
	}
	if ok && opts.Trigger != nil {
		r.triggerAt.Store(max(int64(r.since()), 1))
		if err := opts.Trigger(ctx); err != nil {
			r.errorf("update trigger: %v", err)
		} else {
			ok = r.await(ctx, r.updateDone)
		}
	}
	if ok && opts.Hold != nil {
		if err := opts.Hold(ctx); err != nil {
			r.errorf("hold: %v", err)
		}
	}
	rep.TimedOut = !ok && ctx.Err() != nil
	stopGateways()
	wg.Wait()
	for _, g := range gws {
		_ = g.conn.Close()
	}
	rep.Seconds = r.since().Seconds()

	cold := make([]time.Duration, len(gws))
	update := make([]time.Duration, len(gws))
	bytesPer := make([]int64, len(gws))
	for i, g := range gws {
		cold[i], update[i], bytesPer[i] = g.cold, g.update, g.bytes
	}
	rep.Cold = summarize(cold)
	if opts.Trigger != nil {
		u := summarize(update)
		rep.Update = &u
	}
	rep.BytesPerProxy = summarizeBytes(bytesPer)
	rep.Responses, rep.NACKs, rep.Errors, rep.Reconnects = r.responses.Load(), r.nacks.Load(), r.errs.Load(), r.reconnects.Load()
	rep.UniqueParses = r.cache.parses.Load()
	rep.Unimplemented = r.unimplemented.Load()
	r.mu.Lock()
	rep.ErrorSamples, rep.NACKSamples = r.errSamples, r.nackSample
	r.mu.Unlock()
	return rep, nil
}

// await waits for done; false if the run ended first.
func (r *runner) await(ctx context.Context, done chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-r.fatal:
	}
	return false
}

func (r *runner) node(i int) *corev3.Node {
	return adsc.IstioNode(adsc.NodeOptions{
		Type:      "router",
		IP:        fmt.Sprintf("10.%d.%d.%d", 1+i>>16, (i>>8)&255, i&255),
		PodName:   fmt.Sprintf("ingressgateway-%d", i),
		Namespace: r.opts.Namespace,
		Labels:    r.opts.Labels,
		Metadata:  map[string]string{"ISTIO_VERSION": "1.29.0"},
	})
}

// dump writes raw responses (by type) into DumpDir/phase.
func (r *runner) dump(phase string, raw map[string][]byte) {
	dir := filepath.Join(r.opts.DumpDir, phase)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.errorf("dump: %v", err)
		return
	}
	for t, name := range DumpFiles {
		b := raw[t]
		if b == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Clone(b), 0o644); err != nil {
			r.errorf("dump: %v", err)
		}
	}
}
