// Package crdclient is the Kubernetes config source: it watches the Istio
// custom resources (Gateway, VirtualService, DestinationRule, ServiceEntry,
// networking.istio.io/v1; Telemetry, telemetry.istio.io/v1;
// RequestAuthentication and AuthorizationPolicy, security.istio.io/v1;
// EnvoyFilter, networking.istio.io/v1alpha3) with one shared informer per kind
// and namespace, keeps the valid objects in memory, and tells registered
// handlers about every change through the same delayed task queue
// (pkg/queue) that file mode uses, so handlers see one ordered stream of
// events whatever the source.
//
// An object that passes the CRD's OpenAPI schema but fails Wayfinder's
// validation (a negative weight, a bad regex) is not served: its last valid
// version, if any, stays in the store, and the problem is logged, counted,
// reported by ConfigErrors and recorded as a Warning Event on the object.
// A namespace the RBAC forbids is reported the same way (ConfigErrors and
// a log line naming namespace and resource) and treated as empty, so the
// control plane keeps serving every namespace it may read; the informer
// keeps retrying and picks the namespace up once access is granted.
package crdclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kubeutil"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// Options configure a Controller.
type Options struct {
	// Client talks to the API server. Required.
	Client kclient.Istio
	// Namespaces limits the watch to these namespaces; empty watches all.
	Namespaces []string
	// Queue carries events to handlers. If nil the controller creates one
	// and Run runs it; a queue passed in must be run by its owner.
	Queue *queue.Queue
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Recorder, when set, receives a Warning Event (reason InvalidConfig)
	// for every object rejected by validation.
	Recorder record.EventRecorder
	// Registerer, when set, receives the controller's metrics.
	Registerer prometheus.Registerer
	// Clock paces the wait for the informers' first sync; defaults to the
	// real clock.
	Clock clock.WithTicker
	// ResyncPeriod is the informers' resync period; 0 disables resync.
	// Resyncs never reach handlers: an update whose resourceVersion did
	// not change is dropped.
	ResyncPeriod time.Duration
	// Kinds limits the kinds watched; empty means every kind in schema.All.
	Kinds []schema.Kind

	// validate replaces validation.Validate in tests.
	validate func(config.Config) error
}

// EventReasonInvalid is the reason of the Event recorded on a rejected object.
const EventReasonInvalid = "InvalidConfig"

// Controller is the Kubernetes model.ConfigStoreController.
type Controller struct {
	opts      Options
	log       *slog.Logger
	clock     clock.WithTicker
	queue     *queue.Queue
	ownQueue  bool
	validate  func(config.Config) error
	factories []*kclient.IstioFactory
	watches   []*watch
	rejected  *prometheus.CounterVec

	// mu guards the store view. It is written only by queue tasks, just
	// before the handlers are called, so what Get and List return is what
	// the handlers have been told (or one event ahead).
	mu      sync.RWMutex
	objects map[config.Key]config.Config
	byKind  map[schema.Kind][]config.Config
	// stale marks the kinds whose byKind list misses recent events.
	stale   map[schema.Kind]bool
	invalid map[config.Key][]*config.Error

	// handlers is touched only by queue tasks.
	handlers map[schema.Kind][]model.EventHandler

	syncMu      sync.Mutex
	loaded      bool // every informer synced and its initial events ran
	pendingRegs int  // handlers registered before sync, not yet replayed
	synced      atomic.Bool
	syncedCh    chan struct{}

	started atomic.Bool
}

var (
	_ model.ConfigStoreController = (*Controller)(nil)
	_ model.ConfigErrorReporter   = (*Controller)(nil)
)

// New builds the informers; nothing is listed or watched until Run.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("crdclient: Options.Client is nil")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.validate == nil {
		opts.validate = validation.Validate
	}
	if len(opts.Kinds) == 0 {
		opts.Kinds = schema.Kinds()
	}
	c := &Controller{
		opts:     opts,
		log:      opts.Logger.With("source", "kubernetes"),
		clock:    opts.Clock,
		queue:    opts.Queue,
		validate: opts.validate,
		objects:  map[config.Key]config.Config{},
		byKind:   map[schema.Kind][]config.Config{},
		stale:    map[schema.Kind]bool{},
		invalid:  map[config.Key][]*config.Error{},
		handlers: map[schema.Kind][]model.EventHandler{},
		syncedCh: make(chan struct{}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_kube_config_rejected_total",
			Help: "Istio config objects from Kubernetes rejected by validation (not served), by kind.",
		}, []string{"kind"}),
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(c.rejected); err != nil {
			return nil, fmt.Errorf("crdclient: registering metrics: %w", err)
		}
	}
	if c.queue == nil {
		c.queue = queue.New(queue.Options{Clock: opts.Clock, Logger: opts.Logger})
		c.ownQueue = true
	}
	namespaces := kubeutil.NormalizeNamespaces(opts.Namespaces)
	for _, ns := range namespaces {
		f := kclient.NewIstioFactory(opts.Client, opts.ResyncPeriod, ns)
		c.factories = append(c.factories, f)
		for _, k := range opts.Kinds {
			w, err := c.newWatch(f, ns, k)
			if err != nil {
				return nil, err
			}
			c.watches = append(c.watches, w)
		}
	}
	return c, nil
}

// InformerFactories are the factories of the controller's informers, one
// per watched namespace, for readers that need the same objects (the
// status writer) without a second watch.
func (c *Controller) InformerFactories() []*kclient.IstioFactory {
	return c.factories
}

// Get returns the object or nil. The result shares the stored spec, which
// must not be mutated.
func (c *Controller) Get(kind schema.Kind, namespace, name string) *config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	obj, ok := c.objects[config.Key{Kind: kind, Namespace: namespace, Name: name}]
	if !ok {
		return nil
	}
	return &obj
}

// List returns the objects of kind in namespace ("" for all), sorted by
// namespace then name.
func (c *Controller) List(kind schema.Kind, namespace string) []config.Config {
	c.mu.RLock()
	all, stale := c.byKind[kind], c.stale[kind]
	c.mu.RUnlock()
	if stale {
		c.mu.Lock()
		all = c.sortedLocked(kind)
		c.mu.Unlock()
	}
	// all is never modified once built (a rebuild makes a new slice), so
	// it is read here without the lock.
	if namespace == "" {
		return slices.Clone(all)
	}
	var out []config.Config
	for _, obj := range all {
		if obj.Namespace == namespace {
			out = append(out, obj)
		}
	}
	return out
}

// ConfigErrors returns the problems standing now: objects rejected by
// validation and watches the API server refuses, sorted by object and
// field.
func (c *Controller) ConfigErrors() []*config.Error {
	c.mu.RLock()
	var out []*config.Error
	for _, errs := range c.invalid {
		out = append(out, errs...)
	}
	c.mu.RUnlock()
	for _, w := range c.watches {
		if e := w.deniedError(); e != nil {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b *config.Error) int {
		return cmp.Or(compareKeys(a.Key, b.Key), cmp.Compare(a.Source, b.Source),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	return out
}

// HasSynced reports whether every informer has listed its objects and the
// resulting events have been delivered to every handler registered before
// then. It never goes back to false.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// Synced is closed when HasSynced becomes true, for callers that would
// rather wait than poll.
func (c *Controller) Synced() <-chan struct{} { return c.syncedCh }

// RegisterEventHandler adds handler for kind. Registration runs as a task
// on the event queue, so it is ordered with event delivery: the handler is
// first given an add for every object already stored, then every later
// event.
func (c *Controller) RegisterEventHandler(kind schema.Kind, handler model.EventHandler) {
	c.syncMu.Lock()
	counted := !c.synced.Load()
	if counted {
		c.pendingRegs++
	}
	c.syncMu.Unlock()
	c.queue.Push(func() error {
		c.handlers[kind] = append(c.handlers[kind], handler)
		for _, obj := range c.List(kind, "") {
			handler(config.Config{}, obj, model.EventAdd)
		}
		if counted {
			c.syncMu.Lock()
			c.pendingRegs--
			c.updateSynced()
			c.syncMu.Unlock()
		}
		return nil
	})
}

// updateSynced must be called with syncMu held.
func (c *Controller) updateSynced() {
	if c.loaded && c.pendingRegs == 0 && !c.synced.Load() {
		c.synced.Store(true)
		close(c.syncedCh)
		c.log.Info("kubernetes config synced", "objects", c.count())
	}
}

func (c *Controller) count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.objects)
}

// Run starts the informers and, if the controller owns its queue, runs
// it; it returns once ctx is cancelled and every informer goroutine has
// stopped. Call it once.
func (c *Controller) Run(ctx context.Context) {
	if c.started.Swap(true) {
		c.log.Error("crdclient: Run called more than once; ignoring")
		return
	}
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	var wg sync.WaitGroup
	if c.ownQueue {
		wg.Go(func() { c.queue.Run(ctx) })
	}
	wg.Go(func() { c.waitForSync(ctx) })
	<-ctx.Done()
	for _, f := range c.factories {
		f.Shutdown()
	}
	wg.Wait()
}

// syncPoll is how often Run checks the informers during the first sync.
const syncPoll = 20 * time.Millisecond

// waitForSync waits until every watch has synced (or been refused by the
// RBAC, see package comment) and its initial events were queued, then
// queues the task that marks the store loaded: it runs after every
// initial event.
func (c *Controller) waitForSync(ctx context.Context) {
	t := c.clock.NewTicker(syncPoll)
	defer t.Stop()
	for {
		if c.watchesSynced() {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
	c.queue.Push(func() error {
		c.syncMu.Lock()
		defer c.syncMu.Unlock()
		c.loaded = true
		c.updateSynced()
		return nil
	})
}

func (c *Controller) watchesSynced() bool {
	for _, w := range c.watches {
		if !w.reg.HasSynced() && !w.isDenied() {
			return false
		}
	}
	return true
}

func compareKeys(a, b config.Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func compareConfigs(a, b config.Config) int { return compareKeys(a.Key(), b.Key()) }

func sortConfigs(list []config.Config) { slices.SortFunc(list, compareConfigs) }
