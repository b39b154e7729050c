package ingress

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

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersnetworkingv1 "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	// Client reads Ingresses, IngressClasses and Services. Required.
	Client kubernetes.Interface
	// Namespaces limits the watch of Ingresses and Services; empty is all.
	Namespaces []string
	// Queue carries events to handlers: the control plane's shared queue,
	// run by its owner. Required.
	Queue *queue.Queue
	// Convert tunes conversion; its Services func is the controller's.
	Convert Options
	// Clock paces the wait for the first sync; default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Controller is a Kubernetes config source: it watches Ingresses,
// IngressClasses and the Services their backends name, converts them
// (Convert) on every change, and tells registered handlers which generated
// Gateways and VirtualServices were added, updated or deleted, through the
// shared queue like every other source.
type Controller struct {
	opts      ControllerOptions
	log       *slog.Logger
	factories []informers.SharedInformerFactory
	ingresses []listersnetworkingv1.IngressLister
	services  map[string]listerscorev1.ServiceLister // by namespace; "" for all
	classes   listersnetworkingv1.IngressClassLister
	regs      []registration

	pending atomic.Bool // a conversion is queued

	mu       sync.RWMutex
	objects  map[config.Key]config.Config
	errs     []*config.Error
	named    map[string]bool // "ns/name" of Services resolving named ports
	handlers map[schema.Kind][]model.EventHandler
	loaded   bool // the first conversion after sync has run

	synced   atomic.Bool
	syncedCh chan struct{}
}

// registration is one informer handler, and whether the API server
// refused the watch (forbidden namespace).
type registration struct {
	what   string
	reg    cache.ResourceEventHandlerRegistration
	denied *atomic.Bool
}

var (
	_ model.ConfigStoreController = (*Controller)(nil)
	_ model.ConfigErrorReporter   = (*Controller)(nil)
)

// NewController sets up the informers; nothing is watched before Run.
func NewController(opts ControllerOptions) (*Controller, error) {
	if opts.Client == nil || opts.Queue == nil {
		return nil, errors.New("ingress: Client and Queue are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Controller{
		opts: opts, log: opts.Logger.With("source", "ingress"),
		services: map[string]listerscorev1.ServiceLister{},
		objects:  map[config.Key]config.Config{}, handlers: map[schema.Kind][]model.EventHandler{},
		syncedCh: make(chan struct{}),
	}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	every := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.schedule() },
		UpdateFunc: func(any, any) { c.schedule() },
		DeleteFunc: func(any) { c.schedule() },
	}
	// A Service matters only when a backend names one of its ports.
	services := cache.FilteringResourceEventHandler{FilterFunc: c.namesPortOf, Handler: every}
	for _, ns := range namespaces {
		f := informers.NewSharedInformerFactoryWithOptions(opts.Client, 0, informers.WithNamespace(ns))
		c.factories = append(c.factories, f)
		ing, svc := f.Networking().V1().Ingresses(), f.Core().V1().Services()
		c.ingresses = append(c.ingresses, ing.Lister())
		c.services[ns] = svc.Lister()
		if err := c.register("Ingresses in "+nsName(ns), ing.Informer(), every); err != nil {
			return nil, err
		}
		if err := c.register("Services in "+nsName(ns), svc.Informer(), services); err != nil {
			return nil, err
		}
	}
	// IngressClasses are cluster-scoped.
	cf := informers.NewSharedInformerFactory(opts.Client, 0)
	c.factories = append(c.factories, cf)
	c.classes = cf.Networking().V1().IngressClasses().Lister()
	if err := c.register("IngressClasses", cf.Networking().V1().IngressClasses().Informer(), every); err != nil {
		return nil, err
	}
	return c, nil
}

func nsName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

func (c *Controller) register(what string, inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	r, err := registerWatch(c.log, what, inf, h)
	if err != nil {
		return err
	}
	c.regs = append(c.regs, r)
	return nil
}

// registerWatch adds h to inf. A forbidden watch is reported and treated
// as empty (registration.denied), so the first push does not wait for it;
// the informer keeps retrying and picks it up once access is granted.
func registerWatch(log *slog.Logger, what string, inf cache.SharedIndexInformer, h cache.ResourceEventHandler) (registration, error) {
	denied := &atomic.Bool{}
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !denied.Swap(true) {
				log.Error("watch forbidden by RBAC; treated as empty", "watch", what, "error", err)
			}
			return
		}
		log.Warn("watch failed; retrying", "watch", what, "error", err)
	}); err != nil {
		return registration{}, fmt.Errorf("ingress: %s: %w", what, err)
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return registration{}, fmt.Errorf("ingress: %s: %w", what, err)
	}
	return registration{what: what, reg: reg, denied: denied}, nil
}

func (c *Controller) namesPortOf(obj any) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*corev1.Service)
	if !ok {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.named[s.Namespace+"/"+s.Name]
}

// schedule queues one conversion; changes arriving before it runs share it.
func (c *Controller) schedule() {
	if c.pending.Swap(true) {
		return
	}
	c.opts.Queue.Push(c.convert)
}

// service looks a Service up in whichever lister watches its namespace.
func (c *Controller) service(namespace, name string) *corev1.Service {
	l, ok := c.services[namespace]
	if !ok {
		l, ok = c.services[""]
	}
	if !ok {
		return nil
	}
	s, err := l.Services(namespace).Get(name)
	if err != nil {
		return nil
	}
	return s
}

// convert runs on the queue: it converts everything, stores the result
// and tells the handlers what changed.
func (c *Controller) convert() error {
	c.pending.Store(false)
	c.mu.RLock()
	loaded := c.loaded
	c.mu.RUnlock()
	if !loaded {
		return nil // the first conversion runs once the informers synced
	}
	var ings []*networkingv1.Ingress
	for _, l := range c.ingresses {
		list, err := l.List(labels.Everything())
		if err != nil {
			return err
		}
		ings = append(ings, list...)
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	opts := c.opts.Convert
	named := map[string]bool{}
	opts.Services = func(ns, name string) *corev1.Service {
		named[ns+"/"+name] = true
		return c.service(ns, name)
	}
	cfgs, errs := Convert(ings, classes, opts)
	for _, e := range errs {
		c.log.Warn("Ingress not fully converted", "error", e.Error())
	}

	next := make(map[config.Key]config.Config, len(cfgs))
	for _, cfg := range cfgs {
		next[cfg.Key()] = cfg
	}
	type event struct {
		old, cur config.Config
		ev       model.Event
	}
	var events []event
	c.mu.Lock()
	for _, cfg := range cfgs {
		old, ok := c.objects[cfg.Key()]
		switch {
		case !ok:
			events = append(events, event{cur: cfg, ev: model.EventAdd})
		case !config.SameContent(old, cfg):
			events = append(events, event{old: old, cur: cfg, ev: model.EventUpdate})
		}
	}
	for key, old := range c.objects {
		if _, ok := next[key]; !ok {
			events = append(events, event{old: old, cur: old, ev: model.EventDelete})
		}
	}
	c.objects, c.errs, c.named = next, errs, named
	handlers := make(map[schema.Kind][]model.EventHandler, len(c.handlers))
	for k, hs := range c.handlers {
		handlers[k] = slices.Clone(hs)
	}
	c.mu.Unlock()

	slices.SortFunc(events, func(a, b event) int { return compareKey(a.cur.Key(), b.cur.Key()) })
	for _, e := range events {
		for _, h := range handlers[e.cur.Kind] {
			h(e.old, e.cur, e.ev)
		}
	}
	return nil
}

func compareKey(a, b config.Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// Get returns the generated object or nil. Do not mutate it.
func (c *Controller) Get(kind schema.Kind, namespace, name string) *config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	obj, ok := c.objects[config.Key{Kind: kind, Namespace: namespace, Name: name}]
	if !ok {
		return nil
	}
	return &obj
}

// List returns the generated objects of kind in namespace ("" for all),
// sorted by namespace then name.
func (c *Controller) List(kind schema.Kind, namespace string) []config.Config {
	c.mu.RLock()
	var out []config.Config
	for _, obj := range c.objects {
		if obj.Kind == kind && (namespace == "" || obj.Namespace == namespace) {
			out = append(out, obj)
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b config.Config) int { return compareKey(a.Key(), b.Key()) })
	return out
}

// ConfigErrors returns what the last conversion could not convert, and the
// watches the API server refuses.
func (c *Controller) ConfigErrors() []*config.Error {
	c.mu.RLock()
	out := slices.Clone(c.errs)
	c.mu.RUnlock()
	for _, r := range c.regs {
		if r.denied.Load() && !r.reg.HasSynced() {
			out = append(out, &config.Error{Source: "Kubernetes watch of " + r.what,
				Message: "forbidden by RBAC; treated as empty until access is granted"})
		}
	}
	slices.SortStableFunc(out, func(a, b *config.Error) int { return cmp.Compare(a.Source, b.Source) })
	return out
}

// RegisterEventHandler adds handler for kind (Gateway or VirtualService).
// It runs on the queue, ordered with events: the handler is first given an
// add for every object already converted.
func (c *Controller) RegisterEventHandler(kind schema.Kind, handler model.EventHandler) {
	c.opts.Queue.Push(func() error {
		c.mu.Lock()
		c.handlers[kind] = append(c.handlers[kind], handler)
		c.mu.Unlock()
		for _, obj := range c.List(kind, "") {
			handler(config.Config{}, obj, model.EventAdd)
		}
		return nil
	})
}

// HasSynced reports whether the informers have listed everything and the
// resulting objects have been given to the handlers.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// Synced is closed when HasSynced becomes true.
func (c *Controller) Synced() <-chan struct{} { return c.syncedCh }

// syncPoll is how often Run checks the informers during the first sync.
const syncPoll = 20 * time.Millisecond

// Run starts the informers, queues the first conversion once they have
// synced (or been refused), and returns when ctx is cancelled and every
// informer has stopped. The queue is run by its owner.
func (c *Controller) Run(ctx context.Context) {
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range c.factories {
			f.Shutdown()
		}
	}()
	t := c.opts.Clock.NewTicker(syncPoll)
	defer t.Stop()
	for !c.informersSynced() {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
	c.opts.Queue.Push(func() error {
		c.mu.Lock()
		c.loaded = true
		c.mu.Unlock()
		err := c.convert()
		if !c.synced.Swap(true) {
			close(c.syncedCh)
			c.log.Info("Ingress config synced", "objects", len(c.List(schema.Gateway, ""))+len(c.List(schema.VirtualService, "")))
		}
		return err
	})
	<-ctx.Done()
}

func (c *Controller) informersSynced() bool {
	for _, r := range c.regs {
		if !r.reg.HasSynced() && !r.denied.Load() {
			return false
		}
	}
	return true
}
