package xds

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authn"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// Options configure a DiscoveryServer.
type Options struct {
	// Store is read once per push to build the push context. Required.
	Store model.ConfigStore
	// Registries add services (Kubernetes Services) to every push context
	// besides the store's ServiceEntries.
	Registries []model.ServiceDiscovery
	// Scoping is how config of one namespace reaches proxies of another
	// (root namespace, default exportTo); the zero value is istiod's
	// default mesh.
	Scoping model.Scoping
	// Mesh returns the mesh config in force, read at each full push; nil
	// means istiod's defaults. A change is pushed by whoever watches it
	// (ConfigUpdate with a full request).
	Mesh func() *mesh.Config
	// Errors, when set, reports the problems the source currently has
	// (files that do not parse, objects that fail validation). They are
	// counted with the translation errors and shown by /debug/configz.
	Errors model.ConfigErrorReporter
	// Generator translates config; nil means core.DefaultGenerator.
	Generator core.Generator
	// JWKS resolves RequestAuthentication jwksUris (pkg/jwks); nil serves
	// rules without inline jwks fail-closed.
	JWKS authn.JWKSResolver
	// Debounce merges config changes. A nil Clock is replaced by Clock.
	Debounce debounce.Options
	// EndpointDebounce merges endpoint-only changes (requests that are not
	// Full) on their own, so that a steady stream of them is pushed every
	// MaxDelay rather than held for Debounce.MaxDelay; zero values take
	// DefaultEndpointDebounce's. A nil Clock is replaced by Clock.
	EndpointDebounce debounce.Options
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registry receives the server's metrics; the assembly owns it and
	// serves it at /metrics. Nil means a registry of the server's own,
	// which nothing serves.
	Registry prometheus.Registerer
	// Clock stamps connections, ACKs and NACKs and times pushes; nil means
	// the real clock.
	Clock clock.WithTicker
	// Secrets holds the certificates HTTPS Gateway servers name
	// (credentialName), for the default generator; ignored when Generator
	// is set.
	Secrets model.SecretStore
	// SecretAuthorizer decides whether a proxy's ServiceAccount may have a
	// Secret of another namespace; nil refuses every such Secret. Secrets
	// of a proxy's own namespace need no authorizer, and a proxy without a
	// verified identity gets none.
	SecretAuthorizer model.SecretAuthorizer
	// GatewaySecretGrants authorize kubernetes-gateway:// Secrets of
	// another namespace (the Gateway API's ReferenceGrants); nil refuses
	// them.
	GatewaySecretGrants model.GatewaySecretGrants
	// AuthFailures counts and logs streams refused for their identity (a
	// namespace claim that is not theirs, a node id taken by another
	// identity); nil does neither.
	AuthFailures *security.Failures
	// Limits bound what one client can cost; zero fields are defaults.
	Limits limits.Options
	// WarmGateways translates each Gateway selector's configuration when a
	// full push finds no proxy connected, as on start before ready, so the
	// first gateways to connect do not wait for it (see
	// push.Translator.Warm).
	WarmGateways bool
	// KeepRejectedPatches turns off what a NACK of a resource an
	// EnvoyFilter patched does by default: withhold the patches that
	// touched it from it and push again.
	KeepRejectedPatches bool
}

// DiscoveryServer serves ADS from views computed by pushes. See the
// package comment for how pushes, NACKs and locking work.
type DiscoveryServer struct {
	store   model.ConfigStore
	errors  model.ConfigErrorReporter
	log     *slog.Logger
	clock   clock.WithTicker
	metrics *metrics
	// authFailures is Options.AuthFailures.
	authFailures *security.Failures
	// withholdRejected is !Options.KeepRejectedPatches.
	withholdRejected bool

	// tr translates pushes (package push); it is called under pushMu.
	tr *push.Translator
	// sotwIDs and deltaIDs number the streams of each protocol.
	sotwIDs, deltaIDs atomic.Int64
	// queue merges push requests into pushes (package push).
	queue *push.Queue

	// limits bound what a client can cost (package limits; the server's
	// side is limits.go).
	limits *limits.Limiter
	// drain refuses and closes streams on shutdown; see drain.go.
	drain *drainState

	// ctx ends every ADS stream; it is cancelled when Run returns.
	ctx    context.Context
	cancel context.CancelFunc

	synced        atomic.Bool
	firstPushOnce sync.Once
	firstPushDone chan struct{}

	// pushMu serialises pushes and proxy connects; see the package comment.
	pushMu sync.Mutex

	// mu guards everything below.
	mu sync.Mutex
	// state is the result of the last push; nil before the first.
	state *push.State
	// proxies are the connected proxies by node id.
	proxies map[string]*proxyState
	// streams are the open ADS streams, including streams whose first
	// request has not arrived yet.
	streams map[streamKey]*streamState
	// served sizes what proxies are sent, which the limits on names grow
	// with (limits.go).
	served servedStats
}

// NewDiscoveryServer builds a server. Nothing runs until Run; ADS streams
// may connect before that and wait for the first push.
func NewDiscoveryServer(opts Options) *DiscoveryServer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Generator == nil {
		opts.Generator = core.DefaultGenerator{Secrets: opts.Secrets, Caches: core.NewCaches()}
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Debounce.Clock == nil {
		opts.Debounce.Clock = opts.Clock
	}
	s := &DiscoveryServer{
		store:            opts.Store,
		errors:           opts.Errors,
		log:              opts.Logger,
		clock:            opts.Clock,
		firstPushDone:    make(chan struct{}),
		proxies:          map[string]*proxyState{},
		streams:          map[streamKey]*streamState{},
		authFailures:     opts.AuthFailures,
		withholdRejected: !opts.KeepRejectedPatches,
	}
	s.metrics = newMetrics(opts.Registry, s.currentErrors)
	s.tr = push.New(push.Options{
		Store:               opts.Store,
		Registries:          opts.Registries,
		Scoping:             opts.Scoping,
		Mesh:                opts.Mesh,
		Generator:           opts.Generator,
		JWKS:                opts.JWKS,
		SecretAuthorizer:    opts.SecretAuthorizer,
		GatewaySecretGrants: opts.GatewaySecretGrants,
		WarmGateways:        opts.WarmGateways,
		Logger:              opts.Logger,
		Translations:        s.metrics.translations,
		Marshaled:           s.countMarshal,
		Lock:                &s.mu,
	})
	s.limits = limits.New(opts.Limits, limits.Config{Clock: opts.Clock, Registry: opts.Registry, Logger: opts.Logger})
	s.drain = newDrainState(opts.Registry)
	wire.SetSharedNamesBytes(s.limits.Options().SharedNamesBytes)
	opts.Registry.MustRegister(backlogCollector{s})
	s.ctx, s.cancel = context.WithCancel(context.Background())

	onFire := opts.Debounce.OnFire
	opts.Debounce.OnFire = func(merged int, waited time.Duration) {
		s.metrics.debounce.Observe(waited.Seconds())
		if onFire != nil {
			onFire(merged, waited)
		}
	}
	s.queue = push.NewQueue(opts.Debounce, opts.EndpointDebounce, s.fire)
	return s
}

// Register adds the aggregated discovery service, state of the world and
// delta (incremental), to g.
func (s *DiscoveryServer) Register(g *grpc.Server) {
	discovery.RegisterAggregatedDiscoveryServiceServer(g, adsService{s: s})
}

// adsService serves the aggregated discovery service's two streams.
type adsService struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
	s *DiscoveryServer
}

func (a adsService) StreamAggregatedResources(stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	release, err := a.s.admit(stream.Context())
	if err != nil {
		return err
	}
	defer release()
	return serveEvictable(stream.Context(), func(ctx context.Context) error {
		return a.s.endCleanlyOnStop(a.s.serveSotw(sotwStream{stream, a.s, ctx}))
	})
}

func (a adsService) DeltaAggregatedResources(stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	release, err := a.s.admit(stream.Context())
	if err != nil {
		return err
	}
	defer release()
	return serveEvictable(stream.Context(), func(ctx context.Context) error {
		return a.s.endCleanlyOnStop(a.s.serveDelta(deltaStream{stream, a.s, ctx}))
	})
}

// endCleanlyOnStop ends a stream without an error once the server is
// stopping (Run's context ended), as the stream loops do when they see it
// stop: a write in flight at that moment sees it first and returns an
// error, which would otherwise reach the client instead. An eviction or a
// drain still ends the stream with its own status (serveEvictable).
func (s *DiscoveryServer) endCleanlyOnStop(err error) error {
	if err != nil && s.ctx.Err() != nil {
		return nil
	}
	return err
}

// sotwStream and deltaStream write responses: the shared serialized body
// of a response the cache built (as a wire.Frame, which the "proto" codec
// registered by package wire writes without copying), else the response
// marshaled as usual. Each write waits at most the send timeout
// (sendWithin): a client that stops reading never holds anything another
// stream needs.
type sotwStream struct {
	discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer
	s *DiscoveryServer
	// ctx is the stream's context, which evict can end (withStreamCancel).
	ctx context.Context
}

func (s sotwStream) Context() context.Context { return s.ctx }

// sendBody writes r: as its body's frame when it has one.
func (s sotwStream) sendBody(r *discovery.DiscoveryResponse, b *snapshot.Body) error {
	f, err := snapshot.SotwFrame(b, r)
	if err != nil {
		return err
	}
	return s.s.sendWithin(s.Context(), r.GetTypeUrl(), func() error {
		if f != nil {
			return s.SendMsg(f)
		}
		return s.AggregatedDiscoveryService_StreamAggregatedResourcesServer.Send(r)
	})
}

type deltaStream struct {
	discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer
	s   *DiscoveryServer
	ctx context.Context
}

func (s deltaStream) Context() context.Context { return s.ctx }

// sendBody writes r: as its body's frame when it has one.
func (s deltaStream) sendBody(r *discovery.DeltaDiscoveryResponse, b *snapshot.Body) error {
	f, err := snapshot.DeltaFrame(b, r)
	if err != nil {
		return err
	}
	return s.s.sendWithin(s.Context(), r.GetTypeUrl(), func() error {
		if f != nil {
			return s.SendMsg(f)
		}
		return s.AggregatedDiscoveryService_DeltaAggregatedResourcesServer.Send(r)
	})
}

// ConfigUpdate asks for a push. Requests are merged by the debouncer;
// before Synced they are merged and then dropped, since the first push
// reads everything anyway.
func (s *DiscoveryServer) ConfigUpdate(req *model.PushRequest) {
	if req == nil {
		return
	}
	if req.Start.IsZero() {
		cp := *req
		cp.Start = s.clock.Now()
		req = &cp
	}
	s.queue.Enqueue(req)
}

// ConfigBatchComplete tells the server that the config changes given to
// ConfigUpdate so far are a whole batch (all that one rescan of the config
// folder found): a lone change is then pushed at once rather than after
// the debouncer's leading delay (see debounce.Debouncer.Flush).
func (s *DiscoveryServer) ConfigBatchComplete() {
	s.queue.Flush()
}

// Synced tells the server the store has delivered its first full load: the
// first full push is queued. Later calls do nothing.
func (s *DiscoveryServer) Synced() {
	if s.synced.Swap(true) {
		return
	}
	s.queue.Enqueue(&model.PushRequest{Full: true, Reasons: map[string]int{"synced": 1}, Start: s.clock.Now()})
}

// FirstPushDone is closed once the first push after Synced has set every
// connected proxy's view.
func (s *DiscoveryServer) FirstPushDone() <-chan struct{} { return s.firstPushDone }

// Ready reports whether the server has synced and pushed once.
func (s *DiscoveryServer) Ready() bool {
	select {
	case <-s.firstPushDone:
		return true
	default:
		return false
	}
}

// Run runs the debouncer and pushes until ctx is cancelled, then ends
// every ADS stream and returns once the push in progress, if any, is done.
// Call it once.
func (s *DiscoveryServer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.queue.Run(ctx) })
	<-ctx.Done()
	s.cancel()
	wg.Wait()
}

// fire is the debouncers' callback: one merged request, one push.
func (s *DiscoveryServer) fire(req *model.PushRequest) {
	if !s.synced.Load() {
		s.log.Debug("push request before config sync dropped; the first push will read everything", "reasons", req.ReasonList())
		return
	}
	s.push(req)
}
