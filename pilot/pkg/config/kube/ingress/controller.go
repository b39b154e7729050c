package ingress

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersnetworkingv1 "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
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
	watches   generated.Watches
	objects   generated.Set

	pending atomic.Bool // a conversion is queued

	mu     sync.RWMutex
	named  map[string]bool // "ns/name" of Services resolving named ports
	loaded bool            // the first conversion after sync has run

	synced   atomic.Bool
	syncedCh chan struct{}
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
		syncedCh: make(chan struct{}),
	}
	c.watches = generated.Watches{Name: "ingress", Log: c.log}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	every := generated.OnAny(c.schedule)
	// A Service matters only when a backend names one of its ports.
	services := cache.FilteringResourceEventHandler{FilterFunc: c.namesPortOf, Handler: every}
	for _, ns := range namespaces {
		f := informers.NewSharedInformerFactoryWithOptions(opts.Client, 0, informers.WithNamespace(ns))
		c.factories = append(c.factories, f)
		ing, svc := f.Networking().V1().Ingresses(), f.Core().V1().Services()
		c.ingresses = append(c.ingresses, ing.Lister())
		c.services[ns] = svc.Lister()
		if err := c.watches.Register("Ingresses in "+generated.NamespaceName(ns), ing.Informer(), every); err != nil {
			return nil, err
		}
		if err := c.watches.Register("Services in "+generated.NamespaceName(ns), svc.Informer(), services); err != nil {
			return nil, err
		}
	}
	// IngressClasses are cluster-scoped.
	cf := informers.NewSharedInformerFactory(opts.Client, 0)
	c.factories = append(c.factories, cf)
	c.classes = cf.Networking().V1().IngressClasses().Lister()
	if err := c.watches.Register("IngressClasses", cf.Networking().V1().IngressClasses().Informer(), every); err != nil {
		return nil, err
	}
	return c, nil
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

	// named is stored before the handlers run, like the objects.
	c.mu.Lock()
	c.named = named
	c.mu.Unlock()
	c.objects.Replace(cfgs, errs)
	return nil
}

// Get returns the generated object or nil. Do not mutate it.
func (c *Controller) Get(kind schema.Kind, namespace, name string) *config.Config {
	return c.objects.Get(kind, namespace, name)
}

// List returns the generated objects of kind in namespace ("" for all),
// sorted by namespace then name.
func (c *Controller) List(kind schema.Kind, namespace string) []config.Config {
	return c.objects.List(kind, namespace)
}

// ConfigErrors returns what the last conversion could not convert, and the
// watches the API server refuses.
func (c *Controller) ConfigErrors() []*config.Error {
	return generated.ConfigErrors(&c.objects, &c.watches)
}

// RegisterEventHandler adds handler for kind (Gateway or VirtualService).
// It runs on the queue, ordered with events: the handler is first given an
// add for every object already converted.
func (c *Controller) RegisterEventHandler(kind schema.Kind, handler model.EventHandler) {
	c.opts.Queue.Push(func() error {
		c.objects.Register(kind, handler)
		return nil
	})
}

// HasSynced reports whether the informers have listed everything and the
// resulting objects have been given to the handlers.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// Synced is closed when HasSynced becomes true.
func (c *Controller) Synced() <-chan struct{} { return c.syncedCh }

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
	if !c.watches.WaitSynced(ctx, c.opts.Clock) {
		return
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
