package gatewayapi

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	cfgschema "github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	// Client reads the Gateway API kinds. Required.
	Client kclient.GatewayAPI
	// Kube reads Services and Namespaces, and discovers which Gateway API
	// kinds the API server serves. Required.
	Kube kclient.Kube
	// ServiceEntries, when set, lists the ServiceEntries backendRefs of
	// kind Hostname name: the Istio config store's (valid ones only), so
	// they are not watched twice. Its owner calls Schedule when they
	// change. Nil finds no host.
	ServiceEntries func() []config.Config
	// ServiceEntriesSynced, when set, is closed once ServiceEntries lists
	// the store's first full load; the first conversion waits for it.
	ServiceEntriesSynced <-chan struct{}
	// Secrets, when set, looks up a Secret in the control plane's Secret
	// informer (the SDS store's), against which listeners'
	// certificateRefs are resolved; its owner calls SecretChanged on each
	// change (refs.go). Nil checks no certificate.
	Secrets func(namespace, name string) *corev1.Secret
	// SecretsSynced, when set, blocks until Secrets lists every Secret
	// (or ctx ends); the first conversion waits for it.
	SecretsSynced func(ctx context.Context) bool
	// Namespaces limits the watch of namespaced kinds; empty is all.
	Namespaces []string
	// Queue carries events to handlers: the control plane's shared queue,
	// run by its owner. Required.
	Queue *queue.Queue
	// Convert tunes conversion.
	Convert gatewayapi.Options
	// Metadata, when set, watches CustomResourceDefinitions (metadata
	// only), so that a Gateway API kind whose CRD is installed after start
	// is watched from then on; nil: such a kind waits for a restart.
	Metadata metadata.Interface
	// Clock paces the wait for the first sync; default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Controller is a Kubernetes config source: it watches GatewayClasses,
// Gateways, ListenerSets, HTTPRoutes, GRPCRoutes, TLSRoutes, TCPRoutes,
// ReferenceGrants and BackendTLSPolicies (those whose CRD is installed), the Services
// backends name, and the Namespaces allowedRoutes selectors read, converts
// everything (gatewayapi.ConvertWithStatus) on every change, and tells
// registered handlers which generated Gateways, VirtualServices and
// DestinationRules were added, updated or deleted, through the shared
// queue like every other source.
//
// Which kinds are served is discovered when Run starts: a kind whose CRD
// is not installed is skipped with one log line and never holds back
// readiness. With ControllerOptions.Metadata, a Gateway API CRD installed
// later is noticed and its kind watched from then on, without a restart.
type Controller struct {
	*generated.Source // the generated config, served to the model
	opts              ControllerOptions
	log               *slog.Logger

	mu    sync.RWMutex
	lists lists
	// watchMu serialises watch; watched are the resources it watches.
	watchMu sync.Mutex
	watched map[string]bool
	// status is the status computed by the last conversion (guarded by mu).
	status gatewayapi.Status
	// secretGrants are the last conversion's (guarded by mu).
	secretGrants gatewayapi.SecretGrants
	// referenced are the Secrets and ConfigMaps the last conversion
	// looked up (guarded by mu; refs.go).
	referenced gatewayapi.Referenced
	// after holds the first conversion until the references synced
	// (waitForReferences).
	after chan struct{}
}

// lists reads the informers' caches; a nil func is a kind not watched.
type lists struct {
	classes    func() ([]*gw.GatewayClass, error)
	gateways   []func() ([]*gw.Gateway, error)
	routes     []func() ([]*gw.HTTPRoute, error)
	grpcRoutes []func() ([]*gw.GRPCRoute, error)
	tlsRoutes  []func() ([]*gw.TLSRoute, error)
	tcpRoutes  []func() ([]*gw.TCPRoute, error)
	grants     []func() ([]*gw.ReferenceGrant, error)
	backendTLS []func() ([]*gw.BackendTLSPolicy, error)
	// listenerSets (listenerset.go).
	listenerSets []func() ([]*gw.ListenerSet, error)
	services     map[string]listerscorev1.ServiceLister // by namespace; "" for all
	namespaces   listerscorev1.NamespaceLister
	configMaps   map[string]listerscorev1.ConfigMapLister // by namespace; "" for all (refs.go)
}

var (
	_ model.ConfigStoreController = (*Controller)(nil)
	_ model.ConfigErrorReporter   = (*Controller)(nil)
	_ model.GatewaySecretGrants   = (*Controller)(nil)
)

// NewController checks its options; nothing is watched before Run.
func NewController(opts ControllerOptions) (*Controller, error) {
	if opts.Client == nil || opts.Kube == nil || opts.Queue == nil {
		return nil, errors.New("gateway: Client, Kube and Queue are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Controller{opts: opts, log: opts.Logger.With("source", "gateway-api"), after: make(chan struct{})}
	var err error
	c.Source, err = generated.NewSource(generated.SourceOptions{
		Name: "Gateway API", ErrPrefix: "gateway", Queue: opts.Queue, Convert: c.convert, Clock: opts.Clock, Logger: c.log,
		After: c.after,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// servedKinds returns the resources of gateway.networking.k8s.io/v1 the
// API server serves; none when the group is not installed (said once, at
// start: initial).
func (c *Controller) servedKinds(initial bool) map[string]bool {
	out := map[string]bool{}
	res, err := c.opts.Kube.ServerResourcesForGroupVersion(gw.GroupVersion.String())
	if err != nil {
		if !initial && apierrors.IsNotFound(err) {
			return out
		}
		if apierrors.IsNotFound(err) {
			c.log.Info("Gateway API CRDs are not installed; Gateway API objects are not served", "groupVersion", gw.GroupVersion.String())
		} else {
			c.log.Error("cannot discover the Gateway API kinds; Gateway API objects are not served", "error", err)
		}
		return out
	}
	for _, r := range res.APIResources {
		out[r.Name] = true
	}
	return out
}

// watch builds the informers of the served kinds not watched yet and
// returns their factories, not started. Run calls it at start, and again
// whenever a Gateway API CRD appears (crds.go): a kind installed after
// start is then watched without a restart.
func (c *Controller) watch(served map[string]bool, initial bool) ([]generated.Factory, error) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.watched == nil {
		c.watched = map[string]bool{}
	}
	namespaces := slices.Clone(c.opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	every := c.OnAnyChange()
	// GatewayClasses, Gateways and routes: conversion reads their spec,
	// so an update that keeps metadata.generation (a status write, ours
	// included) converts nothing again.
	specChanged := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.Schedule() },
		UpdateFunc: func(o, n any) {
			a, aok := o.(metav1.Object)
			b, bok := n.(metav1.Object)
			if !aok || !bok || a.GetGeneration() != b.GetGeneration() {
				c.Schedule()
			}
		},
		DeleteFunc: func(any) { c.Schedule() },
	}
	// A Service matters for whether it exists, its ports, and (a
	// Gateway's Service) its addresses.
	services := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.Schedule() },
		UpdateFunc: func(o, n any) {
			a, aok := o.(*corev1.Service)
			b, bok := n.(*corev1.Service)
			if !aok || !bok || !slices.EqualFunc(a.Spec.Ports, b.Spec.Ports, func(x, y corev1.ServicePort) bool { return x.Port == y.Port }) ||
				!slices.EqualFunc(gatewayapi.ServiceAddresses(a), gatewayapi.ServiceAddresses(b), sameAddress) {
				c.Schedule()
			}
		},
		DeleteFunc: func(any) { c.Schedule() },
	}
	// want reports whether kind is to be watched from now on.
	want := func(kind cfgschema.GatewayAPIKind) bool {
		resource := kind.Plural
		if c.watched[resource] {
			return false
		}
		if served[resource] {
			if !initial {
				c.log.Info("Gateway API kind installed; now watched", "resource", resource+"."+gw.GroupName)
			}
			return true
		}
		if initial && len(served) > 0 {
			c.log.Info("Gateway API kind not installed; skipped until its CRD appears", "resource", resource+"."+gw.GroupName)
		}
		return false
	}
	useClasses, useGateways, useGrants := want(cfgschema.GatewayClassKind), want(cfgschema.GatewayKind), want(cfgschema.ReferenceGrantKind)
	useRoutes, useGRPC := want(cfgschema.HTTPRouteKind), want(cfgschema.GRPCRouteKind)
	useTLS, useTCP := want(cfgschema.TLSRouteKind), want(cfgschema.TCPRouteKind)
	useBackendTLS := want(cfgschema.BackendTLSPolicyKind)
	useSets := want(cfgschema.ListenerSetKind)
	if !useClasses && !useGateways && !useGrants && !useRoutes && !useGRPC && !useTLS && !useTCP && !useBackendTLS && !useSets {
		return nil, nil
	}
	c.mu.RLock()
	l := c.lists
	c.mu.RUnlock()
	// Fresh slices and maps: input() may be reading the old ones.
	l.gateways, l.routes, l.grpcRoutes = slices.Clone(l.gateways), slices.Clone(l.routes), slices.Clone(l.grpcRoutes)
	l.tlsRoutes, l.tcpRoutes, l.grants = slices.Clone(l.tlsRoutes), slices.Clone(l.tcpRoutes), slices.Clone(l.grants)
	base := l.services == nil // Services and Namespaces not watched yet
	if base {
		l.services = map[string]listerscorev1.ServiceLister{}
	}
	var factories []generated.Factory
	for _, ns := range namespaces {
		f := kclient.NewGatewayFactory(c.opts.Client, 0, ns)
		factories = append(factories, f)
		if useGateways {
			inf := f.Gateways()
			l.gateways = append(l.gateways, func() ([]*gw.Gateway, error) { return inf.Lister().List(labels.Everything()) })
			if err := c.Watch("Gateways in "+generated.NamespaceName(ns), inf.Informer(), specChanged); err != nil {
				return nil, err
			}
		}
		if useRoutes {
			inf := f.HTTPRoutes()
			l.routes = append(l.routes, func() ([]*gw.HTTPRoute, error) { return inf.Lister().List(labels.Everything()) })
			if err := c.Watch("HTTPRoutes in "+generated.NamespaceName(ns), inf.Informer(), specChanged); err != nil {
				return nil, err
			}
		}
		if useGRPC {
			inf := f.GRPCRoutes()
			l.grpcRoutes = append(l.grpcRoutes, func() ([]*gw.GRPCRoute, error) { return inf.Lister().List(labels.Everything()) })
			if err := c.Watch("GRPCRoutes in "+generated.NamespaceName(ns), inf.Informer(), specChanged); err != nil {
				return nil, err
			}
		}
		if useTLS {
			inf := f.TLSRoutes()
			l.tlsRoutes = append(l.tlsRoutes, func() ([]*gw.TLSRoute, error) { return inf.Lister().List(labels.Everything()) })
			if err := c.Watch("TLSRoutes in "+generated.NamespaceName(ns), inf.Informer(), specChanged); err != nil {
				return nil, err
			}
		}
		if useTCP {
			inf := f.TCPRoutes()
			l.tcpRoutes = append(l.tcpRoutes, func() ([]*gw.TCPRoute, error) { return inf.Lister().List(labels.Everything()) })
			if err := c.Watch("TCPRoutes in "+generated.NamespaceName(ns), inf.Informer(), specChanged); err != nil {
				return nil, err
			}
		}
		if useGrants {
			inf := f.ReferenceGrants()
			l.grants = append(l.grants, func() ([]*gw.ReferenceGrant, error) { return inf.Lister().List(labels.Everything()) })
			if err := c.Watch("ReferenceGrants in "+generated.NamespaceName(ns), inf.Informer(), every); err != nil {
				return nil, err
			}
		}
		if useBackendTLS {
			if err := c.watchBackendTLS(f, ns, &l, specChanged); err != nil {
				return nil, err
			}
		}
		if useSets {
			if err := c.watchListenerSets(f, ns, &l, specChanged); err != nil {
				return nil, err
			}
		}
		if base {
			kf := kclient.NewKubeFactory(c.opts.Kube, 0, ns, nil)
			factories = append(factories, kf)
			svc := kf.Services()
			l.services[ns] = svc.Lister()
			if err := c.Watch("Services in "+generated.NamespaceName(ns), svc.Informer(), services); err != nil {
				return nil, err
			}
			if err := c.watchConfigMaps(kf, ns, &l); err != nil {
				return nil, err
			}
		}
	}
	// GatewayClasses and Namespaces are cluster-scoped.
	if useClasses {
		f := kclient.NewGatewayFactory(c.opts.Client, 0, "")
		factories = append(factories, f)
		inf := f.GatewayClasses()
		l.classes = func() ([]*gw.GatewayClass, error) { return inf.Lister().List(labels.Everything()) }
		if err := c.Watch("GatewayClasses", inf.Informer(), specChanged); err != nil {
			return nil, err
		}
	}
	if base {
		kf := kclient.NewKubeFactory(c.opts.Kube, 0, "", nil)
		factories = append(factories, kf)
		nsInf := kf.Namespaces()
		l.namespaces = nsInf.Lister()
		if err := c.Watch("Namespaces", nsInf.Informer(), every); err != nil {
			return nil, err
		}
	}
	for r, ok := range map[string]bool{cfgschema.GatewayClassKind.Plural: useClasses, cfgschema.GatewayKind.Plural: useGateways,
		cfgschema.ReferenceGrantKind.Plural: useGrants, cfgschema.HTTPRouteKind.Plural: useRoutes,
		cfgschema.GRPCRouteKind.Plural: useGRPC, cfgschema.TLSRouteKind.Plural: useTLS, cfgschema.TCPRouteKind.Plural: useTCP,
		cfgschema.BackendTLSPolicyKind.Plural: useBackendTLS, cfgschema.ListenerSetKind.Plural: useSets} {
		if ok {
			c.watched[r] = true
		}
	}
	c.mu.Lock()
	c.lists = l
	c.mu.Unlock()
	return factories, nil
}

// input reads everything conversion needs from the caches.
func (c *Controller) input() (gatewayapi.Input, error) {
	c.mu.RLock()
	l := c.lists
	c.mu.RUnlock()
	var in gatewayapi.Input
	var err error
	if l.classes != nil {
		if in.GatewayClasses, err = l.classes(); err != nil {
			return in, err
		}
	}
	if in.Gateways, err = listAll(l.gateways); err != nil {
		return in, err
	}
	if in.HTTPRoutes, err = listAll(l.routes); err != nil {
		return in, err
	}
	if in.GRPCRoutes, err = listAll(l.grpcRoutes); err != nil {
		return in, err
	}
	if in.TLSRoutes, err = listAll(l.tlsRoutes); err != nil {
		return in, err
	}
	if in.TCPRoutes, err = listAll(l.tcpRoutes); err != nil {
		return in, err
	}
	if in.ReferenceGrants, err = listAll(l.grants); err != nil {
		return in, err
	}
	if in.BackendTLSPolicies, err = listAll(l.backendTLS); err != nil {
		return in, err
	}
	if in.ListenerSets, err = listAll(l.listenerSets); err != nil {
		return in, err
	}
	if c.opts.ServiceEntries != nil {
		in.ServiceEntries = c.opts.ServiceEntries()
	}
	in.Services = func(namespace, name string) *corev1.Service {
		sl, ok := l.services[namespace]
		if !ok {
			sl, ok = l.services[""]
		}
		if !ok {
			return nil
		}
		s, err := sl.Services(namespace).Get(name)
		if err != nil {
			return nil
		}
		return s
	}
	in.Secrets, in.ConfigMaps = c.opts.Secrets, configMapLookup(l)
	in.Namespaces = func(name string) map[string]string {
		if l.namespaces == nil {
			return nil
		}
		ns, err := l.namespaces.Get(name)
		if err != nil {
			return nil
		}
		return ns.Labels
	}
	in.NamespaceNames = func() []string {
		if l.namespaces == nil {
			return nil
		}
		all, err := l.namespaces.List(labels.Everything())
		if err != nil {
			return nil
		}
		names := make([]string, len(all))
		for i, ns := range all {
			names[i] = ns.Name
		}
		return names
	}
	return in, nil
}

func listAll[T any](fs []func() ([]T, error)) ([]T, error) {
	var out []T
	for _, f := range fs {
		list, err := f()
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	return out, nil
}

// convert reads the caches and converts everything; it runs on the
// queue (generated.Source).
func (c *Controller) convert() ([]config.Config, []*config.Error, error) {
	in, err := c.input()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	if c.opts.Clock != nil {
		now = c.opts.Clock.Now()
	}
	res := gatewayapi.ConvertWithStatus(in, c.opts.Convert, now)
	cfgs, errs := res.Configs, res.Errors
	c.mu.Lock()
	c.status = res.Status
	c.secretGrants = res.SecretGrants
	c.referenced = res.Referenced
	c.mu.Unlock()
	for _, e := range errs {
		c.log.Warn("Gateway API object not fully converted", "error", e.Error())
	}
	return cfgs, errs, nil
}

// GatewayMayUse answers from the last conversion whether generated Istio
// Gateway key may use Secret ref of another namespace (see
// gatewayapi.SecretGrants). It is set together with the generated config,
// before the handlers hear of it: a grant removed is refused from then
// on, and the listener naming the Secret leaves with the same conversion.
func (c *Controller) GatewayMayUse(key config.Key, ref model.SecretRef) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.secretGrants.GatewayMayUse(key, ref)
}

// GeneratedGateway answers from the last conversion whether key and
// source are a generated Istio Gateway's, and which ServiceAccount its
// proxies run as (gatewayapi.SecretGrants).
func (c *Controller) GeneratedGateway(key config.Key, source string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.secretGrants.GeneratedGateway(key, source)
}

// Run discovers the served kinds, starts their informers, queues the first
// conversion once they have synced (or been refused), watches for Gateway
// API CRDs installed later (crds.go), and returns when ctx is cancelled
// and every informer has stopped.
func (c *Controller) Run(ctx context.Context) {
	factories, err := c.watch(c.servedKinds(true), true)
	if err != nil {
		c.log.Error("Gateway API not watched", "error", err)
	}
	late := c.watchCRDs(ctx)
	go c.waitForReferences(ctx)
	c.Source.Run(ctx, factories)
	late.wait()
}

// sameAddress reports whether two addresses of a Gateway's Service are
// the same, so that a Service update that keeps them converts nothing.
func sameAddress(a, b gw.GatewayStatusAddress) bool {
	return a.Value == b.Value && ptr.Deref(a.Type, "") == ptr.Deref(b.Type, "")
}
