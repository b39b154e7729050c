// Package kube is the Kubernetes service registry: Services, their
// EndpointSlices (discovery.k8s.io/v1) and the labels of the Pods behind
// them become model.Services (NAME.NS.svc.cluster.local) for the push
// context, and every change becomes a push request.
//
// A change is classified by its effect, not its cause: the registry
// rebuilds the affected Service and compares it with what it had. A new or
// removed Service, or one whose ports changed, asks for a full push; a
// change to endpoints only (an EndpointSlice update, a Pod relabelled for
// a subset) asks for an endpoints-only push (Full false, reason
// "endpoint"); a change that alters neither (a resync, an unrelated
// label) asks for nothing. So a pod crash-looping between 0 and 1 ready
// endpoints never causes a full push.
//
// Informer callbacks only queue work on the shared task queue (pkg/queue),
// the same one the config controllers use, so registry state changes and
// push requests are ordered with config events.
package kube

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kubeutil"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// Push reasons the registry gives, as counted by pilot_push_triggers.
const (
	ReasonService  = "service"
	ReasonEndpoint = "endpoint"
)

// Options configure a Controller.
type Options struct {
	// Client talks to the API server. Required.
	Client kclient.Kube
	// Namespaces limits the watch to these namespaces; empty watches all.
	Namespaces []string
	// DomainSuffix ends every hostname; defaults to "cluster.local".
	DomainSuffix string
	// Queue carries events. If nil the controller creates one and Run
	// runs it; a queue passed in must be run by its owner.
	Queue *queue.Queue
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock stamps push requests and paces the wait for the first sync;
	// defaults to the real clock.
	Clock clock.WithTicker
	// ResyncPeriod of the informers; 0 disables resync.
	ResyncPeriod time.Duration
}

// Controller is the Kubernetes model.ServiceDiscovery.
type Controller struct {
	opts     Options
	log      *slog.Logger
	clock    clock.WithTicker
	queue    *queue.Queue
	ownQueue bool
	sets     map[string]*informerSet // by namespace; "" when watching all
	watches  []*watch

	// services is the published snapshot, sorted by hostname; each
	// *model.Service in it is immutable.
	services atomic.Pointer[[]*model.Service]

	// Touched only by queue tasks.
	byKey       map[string]*model.Service  // "ns/name" -> service
	podServices map[string]map[string]bool // pod "ns/name" -> service keys
	servicePods map[string][]string        // service key -> pods
	handlers    []func(*model.PushRequest)

	loaded   atomic.Bool
	syncedCh chan struct{}
	started  atomic.Bool

	mu sync.Mutex // guards handlers for AppendPushHandler from any goroutine
}

var _ model.ServiceDiscovery = (*Controller)(nil)

// New builds the informers; nothing is listed or watched until Run.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("serviceregistry/kube: Options.Client is nil")
	}
	if opts.DomainSuffix == "" {
		opts.DomainSuffix = model.DefaultDomainSuffix
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		opts:        opts,
		log:         opts.Logger.With("registry", "kubernetes"),
		clock:       opts.Clock,
		queue:       opts.Queue,
		sets:        map[string]*informerSet{},
		byKey:       map[string]*model.Service{},
		podServices: map[string]map[string]bool{},
		servicePods: map[string][]string{},
		syncedCh:    make(chan struct{}),
	}
	empty := []*model.Service{}
	c.services.Store(&empty)
	if c.queue == nil {
		c.queue = queue.New(queue.Options{Clock: opts.Clock, Logger: opts.Logger})
		c.ownQueue = true
	}
	for _, ns := range kubeutil.NormalizeNamespaces(opts.Namespaces) {
		set, err := c.newInformerSet(ns)
		if err != nil {
			return nil, err
		}
		c.sets[ns] = set
	}
	return c, nil
}

// Services returns every Service, sorted by hostname. The slice and the
// services are shared: do not mutate them.
func (c *Controller) Services() []*model.Service { return *c.services.Load() }

// AppendPushHandler adds a function called with a push request for every
// change after the first sync. Handlers run on the task queue, one at a
// time; they must not block.
func (c *Controller) AppendPushHandler(h func(*model.PushRequest)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, h)
}

// HasSynced reports whether every informer has listed and the resulting
// services are published.
func (c *Controller) HasSynced() bool { return c.loaded.Load() }

// Synced is closed when HasSynced becomes true.
func (c *Controller) Synced() <-chan struct{} { return c.syncedCh }

// ConfigErrors reports watches the API server refuses (RBAC), naming the
// namespace and resource.
func (c *Controller) ConfigErrors() []*config.Error {
	var out []*config.Error
	for _, w := range c.watches {
		if e := w.deniedError(); e != nil {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *config.Error) int { return cmp.Compare(a.Message, b.Message) })
	return out
}

// Run starts the informers and, if the controller owns its queue, runs
// it, until ctx is cancelled; it returns once every informer goroutine
// has stopped. Call it once.
func (c *Controller) Run(ctx context.Context) {
	if c.started.Swap(true) {
		c.log.Error("serviceregistry/kube: Run called more than once; ignoring")
		return
	}
	for _, s := range c.sets {
		s.factory.Start(ctx.Done())
	}
	var wg sync.WaitGroup
	if c.ownQueue {
		wg.Go(func() { c.queue.Run(ctx) })
	}
	wg.Go(func() { c.waitForSync(ctx) })
	<-ctx.Done()
	for _, s := range c.sets {
		s.factory.Shutdown()
	}
	wg.Wait()
}

const syncPoll = 20 * time.Millisecond

func (c *Controller) waitForSync(ctx context.Context) {
	t := c.clock.NewTicker(syncPoll)
	defer t.Stop()
	for !c.watchesSynced() {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
	c.queue.Push(func() error {
		c.loaded.Store(true)
		close(c.syncedCh)
		c.log.Info("kubernetes services synced", "services", len(c.byKey))
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

// recompute rebuilds the Service ns/name from the informer caches,
// publishes it and asks for the push its change needs. It runs on the
// queue.
func (c *Controller) recompute(key string) {
	prev := c.byKey[key]
	cur, podRefs := c.build(key)
	c.indexPods(key, podRefs)
	var full bool
	switch {
	case prev == nil && cur == nil:
		return
	case prev == nil || cur == nil || !sameShape(prev, cur):
		full = true
	case sameEndpoints(prev.Endpoints, cur.Endpoints):
		return
	}
	if cur == nil {
		delete(c.byKey, key)
	} else {
		c.byKey[key] = cur
	}
	c.publish(prev, cur)
	if !c.loaded.Load() {
		return // the first push reads everything
	}
	svc := cmp.Or(cur, prev)
	reason := ReasonEndpoint
	if full {
		reason = ReasonService
	}
	req := &model.PushRequest{
		Full:           full,
		ConfigsUpdated: map[config.Key]struct{}{svc.Source: {}},
		Reasons:        map[string]int{reason: 1},
		Start:          c.clock.Now(),
	}
	c.log.Debug("service changed", "host", svc.Hostname, "full", full, "endpoints", len(svc.Endpoints))
	c.mu.Lock()
	handlers := slices.Clone(c.handlers)
	c.mu.Unlock()
	for _, h := range handlers {
		h(req)
	}
}

// publish stores a new snapshot, sorted by hostname, with prev replaced
// by cur (either may be nil). It changes a copy of the last snapshot in
// place, without sorting: an EndpointSlice update costs one copy of the
// list, not a sort of every Service. Runs on the queue.
func (c *Controller) publish(prev, cur *model.Service) {
	list := slices.Clone(*c.services.Load())
	byHost := func(s *model.Service, host string) int { return cmp.Compare(s.Hostname, host) }
	if prev != nil {
		i, _ := slices.BinarySearchFunc(list, prev.Hostname, byHost)
		for i < len(list) && list[i] != prev && list[i].Hostname == prev.Hostname {
			i++
		}
		if i == len(list) || list[i] != prev {
			c.republish() // not where the snapshot should have it: start over
			return
		}
		list = slices.Delete(list, i, i+1)
	}
	if cur != nil {
		i, _ := slices.BinarySearchFunc(list, cur.Hostname, byHost)
		list = slices.Insert(list, i, cur)
	}
	c.services.Store(&list)
}

// republish builds the snapshot from every Service. Runs on the queue.
func (c *Controller) republish() {
	list := slices.Collect(maps.Values(c.byKey))
	slices.SortFunc(list, func(a, b *model.Service) int { return cmp.Compare(a.Hostname, b.Hostname) })
	c.services.Store(&list)
}

// indexPods records which pods back service key, so a pod's label change
// reaches it. Runs on the queue.
func (c *Controller) indexPods(key string, podRefs []string) {
	for _, pod := range c.servicePods[key] {
		if svcs := c.podServices[pod]; svcs != nil {
			delete(svcs, key)
			if len(svcs) == 0 {
				delete(c.podServices, pod)
			}
		}
	}
	if len(podRefs) == 0 {
		delete(c.servicePods, key)
		return
	}
	c.servicePods[key] = podRefs
	for _, pod := range podRefs {
		if c.podServices[pod] == nil {
			c.podServices[pod] = map[string]bool{}
		}
		c.podServices[pod][key] = true
	}
}
