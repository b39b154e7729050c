package ingress

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersnetworkingv1 "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	// Client reads Ingresses, IngressClasses and Services. Required.
	Client kclient.Kube
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
	*generated.Source // the generated config, served to the model
	opts              ControllerOptions
	log               *slog.Logger
	factories         []generated.Factory
	ingresses         []listersnetworkingv1.IngressLister
	services          map[string]listerscorev1.ServiceLister // by namespace; "" for all
	classes           listersnetworkingv1.IngressClassLister

	mu    sync.RWMutex
	named map[string]bool // "ns/name" of Services resolving named ports
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
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Controller{
		opts: opts, log: opts.Logger.With("source", "ingress"),
		services: map[string]listerscorev1.ServiceLister{},
	}
	var err error
	c.Source, err = generated.NewSource(generated.SourceOptions{
		Name: "Ingress", ErrPrefix: "ingress", Queue: opts.Queue, Convert: c.convert, Clock: opts.Clock, Logger: c.log,
	})
	if err != nil {
		return nil, err
	}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	every := c.OnAnyChange()
	// A Service matters only when a backend names one of its ports.
	services := cache.FilteringResourceEventHandler{FilterFunc: c.namesPortOf, Handler: every}
	for _, ns := range namespaces {
		f := kclient.NewKubeFactory(opts.Client, 0, ns, nil)
		c.factories = append(c.factories, f)
		ing, svc := f.Ingresses(), f.Services()
		c.ingresses = append(c.ingresses, ing.Lister())
		c.services[ns] = svc.Lister()
		if err := c.Watch("Ingresses in "+generated.NamespaceName(ns), ing.Informer(), every); err != nil {
			return nil, err
		}
		if err := c.Watch("Services in "+generated.NamespaceName(ns), svc.Informer(), services); err != nil {
			return nil, err
		}
	}
	// IngressClasses are cluster-scoped.
	cf := kclient.NewKubeFactory(opts.Client, 0, "", nil)
	c.factories = append(c.factories, cf)
	c.classes = cf.IngressClasses().Lister()
	if err := c.Watch("IngressClasses", cf.IngressClasses().Informer(), every); err != nil {
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

// convert reads the caches and converts everything; it runs on the
// queue (generated.Source).
func (c *Controller) convert() ([]config.Config, []*config.Error, error) {
	var ings []*networkingv1.Ingress
	for _, l := range c.ingresses {
		list, err := l.List(labels.Everything())
		if err != nil {
			return nil, nil, err
		}
		ings = append(ings, list...)
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return nil, nil, err
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

	// named is stored before the Source stores the objects and runs the
	// handlers, as it was stored with them.
	c.mu.Lock()
	c.named = named
	c.mu.Unlock()
	return cfgs, errs, nil
}

// Run starts the informers, queues the first conversion once they have
// synced (or been refused), and returns when ctx is cancelled and every
// informer has stopped. The queue is run by its owner.
func (c *Controller) Run(ctx context.Context) { c.Source.Run(ctx, c.factories) }
