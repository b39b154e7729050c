package crdclient

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// watch is one informer: one kind in one namespace ("" for all).
type watch struct {
	c         *Controller
	namespace string
	kind      schema.Kind
	informer  cache.SharedIndexInformer
	reg       cache.ResourceEventHandlerRegistration

	// denied is set while the API server refuses to list or watch (RBAC);
	// deniedMsg says why and deniedRV is the informer's last synced
	// resourceVersion then. Access is back once an event arrives or the
	// informer lists again (its resourceVersion moves), see isDenied.
	denied    atomic.Bool
	mu        sync.Mutex
	deniedMsg string
	deniedRV  string
	// missing marks a refusal because the resource does not exist (its
	// CRD is not installed): reported as a warning, since a cluster
	// without it is a valid setup.
	missing bool
}

// isDenied reports whether the last list or watch was refused and
// nothing has succeeded since.
func (w *watch) isDenied() bool {
	if !w.denied.Load() {
		return false
	}
	w.mu.Lock()
	rv := w.deniedRV
	w.mu.Unlock()
	if w.informer.LastSyncResourceVersion() != rv {
		w.allowed()
		return false
	}
	return true
}

func (w *watch) allowed() {
	if w.denied.Swap(false) {
		w.c.log.Info("kubernetes watch allowed again", "resource", w.resource())
	}
}

func informerFor(f *kclient.IstioFactory, k schema.Kind) (cache.SharedIndexInformer, error) {
	switch k {
	case schema.Gateway:
		return f.Gateways().Informer(), nil
	case schema.VirtualService:
		return f.VirtualServices().Informer(), nil
	case schema.DestinationRule:
		return f.DestinationRules().Informer(), nil
	case schema.ServiceEntry:
		return f.ServiceEntries().Informer(), nil
	case schema.Telemetry:
		return f.Telemetries().Informer(), nil
	case schema.RequestAuthentication:
		return f.RequestAuthentications().Informer(), nil
	case schema.AuthorizationPolicy:
		return f.AuthorizationPolicies().Informer(), nil
	case schema.EnvoyFilter:
		return f.EnvoyFilters().Informer(), nil
	}
	return nil, fmt.Errorf("crdclient: kind %s has no informer", k)
}

func (c *Controller) newWatch(f *kclient.IstioFactory, ns string, k schema.Kind) (*watch, error) {
	inf, err := informerFor(f, k)
	if err != nil {
		return nil, err
	}
	w := &watch{c: c, namespace: ns, kind: k, informer: inf}
	if err := inf.SetWatchErrorHandlerWithContext(w.onWatchError); err != nil {
		return nil, fmt.Errorf("crdclient: %s watch error handler: %w", w.resource(), err)
	}
	w.reg, err = inf.AddEventHandler(w.handlers())
	if err != nil {
		return nil, fmt.Errorf("crdclient: %s event handler: %w", w.resource(), err)
	}
	return w, nil
}

// handlers are the informer callbacks. They run on the informer's
// goroutine and only queue work.
func (w *watch) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.enqueue(obj, model.EventAdd) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(interface{ GetResourceVersion() string })
			n, ok2 := cur.(interface{ GetResourceVersion() string })
			if ok1 && ok2 && o.GetResourceVersion() != "" && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync or relist: nothing changed
			}
			w.enqueue(cur, model.EventUpdate)
		},
		DeleteFunc: func(obj any) { w.enqueue(unwrapTombstone(obj), model.EventDelete) },
	}
}

// resource names what the watch reads, for messages:
// "virtualservices.networking.istio.io in namespace \"foo\"".
func (w *watch) resource() string {
	s := schema.ByKind(w.kind)
	r := s.Plural + "." + s.Group
	if w.namespace == "" {
		return r + " in all namespaces"
	}
	return fmt.Sprintf("%s in namespace %q", r, w.namespace)
}

// onWatchError runs on the informer's goroutine when a list or watch
// fails. The reflector retries with backoff by itself; a refusal by RBAC,
// or a resource the API server does not have (its CRD is not installed,
// as the Telemetry, security or EnvoyFilter CRDs may not be where only the
// networking CRDs were applied), is reported once (and again if it recurs after it was
// resolved) and lets the first sync proceed without this watch.
func (w *watch) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	var msg, logMsg string
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		logMsg = "kubernetes watch forbidden"
		msg = fmt.Sprintf("cannot list/watch %s: %v; objects there are not served until access is granted (check the RBAC of the control plane's service account, or --watch-namespaces)", w.resource(), err)
	case apierrors.IsNotFound(err):
		logMsg = "kubernetes resource not found: CRD not installed"
		msg = fmt.Sprintf("cannot list/watch %s: %v; objects of this kind are not served until its CRD is installed (manifests/crds)", w.resource(), err)
	default:
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	w.mu.Lock()
	changed := w.deniedMsg != msg
	w.deniedMsg = msg
	w.deniedRV = w.informer.LastSyncResourceVersion()
	w.missing = apierrors.IsNotFound(err)
	w.mu.Unlock()
	if !w.denied.Swap(true) || changed {
		w.c.log.Error(logMsg, "resource", w.resource(), "namespace", w.namespace, "kind", w.kind.String(), "error", err)
	}
}

// deniedError is the standing ConfigErrors entry of a refused watch.
func (w *watch) deniedError() *config.Error {
	if !w.isDenied() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	src := "kube://" + w.namespace
	if w.namespace == "" {
		src = "kube://*"
	}
	return &config.Error{Source: src, Key: config.Key{Kind: w.kind, Namespace: w.namespace}, Message: w.deniedMsg, Warning: w.missing}
}

// enqueue converts obj on the informer's goroutine, so the task holds a
// private copy, and queues its delivery.
func (w *watch) enqueue(obj any, ev model.Event) {
	w.allowed()
	cfg, meta, ok := convert(obj)
	if !ok {
		w.c.log.Error("crdclient: informer delivered an object of an unexpected type", "resource", w.resource(), "type", fmt.Sprintf("%T", obj))
		return
	}
	ref := objectReference(cfg.Kind, meta)
	w.c.queue.Push(func() error {
		w.c.apply(ev, cfg, ref)
		return nil
	})
}

// apply updates the store and calls the handlers. It runs on the queue.
func (c *Controller) apply(ev model.Event, cfg config.Config, ref *corev1.ObjectReference) {
	key := cfg.Key()
	if ev == model.EventDelete {
		c.mu.Lock()
		prev, had := c.objects[key]
		delete(c.objects, key)
		delete(c.invalid, key)
		if had {
			c.reindexLocked(key.Kind)
		}
		c.mu.Unlock()
		if had {
			c.notify(config.Config{}, prev, model.EventDelete)
		}
		return
	}
	if err := c.check(cfg); err != nil {
		c.reject(cfg, ref, err)
		return
	}
	c.mu.Lock()
	prev, had := c.objects[key]
	c.objects[key] = cfg
	delete(c.invalid, key)
	c.reindexLocked(key.Kind)
	c.mu.Unlock()
	switch {
	case !had:
		c.notify(config.Config{}, cfg, model.EventAdd)
	case config.SameContent(prev, cfg):
		// A new resourceVersion with the same content (a status or
		// managedFields write, a relist): stored, nobody told.
	default:
		c.notify(prev, cfg, model.EventUpdate)
	}
}

// check validates cfg; a validator panic rejects the object instead of
// taking the control plane down.
func (c *Controller) check(cfg config.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validation failed unexpectedly: %v", r)
		}
	}()
	return c.validate(cfg)
}

// reject records why cfg is not served: a log line per problem, the
// metric, the ConfigErrors entries and an Event on the object. The last
// valid version, if any, stays in the store.
func (c *Controller) reject(cfg config.Config, ref *corev1.ObjectReference, err error) {
	key := cfg.Key()
	errs := config.ErrorsFor(cfg.Source, key, err)
	c.mu.Lock()
	c.invalid[key] = errs
	_, kept := c.objects[key]
	c.mu.Unlock()
	c.rejected.WithLabelValues(key.Kind.String()).Inc()
	fields := make([]string, 0, len(errs))
	for _, e := range errs {
		c.log.Warn("invalid config not served", "kind", key.Kind.String(), "namespace", key.Namespace, "name", key.Name,
			"resourceVersion", cfg.ResourceVersion, "field", e.Field, "error", e.Message, "keptPreviousVersion", kept)
		if e.Field != "" {
			fields = append(fields, e.Field+": "+e.Message)
		} else {
			fields = append(fields, e.Message)
		}
	}
	if c.opts.Recorder != nil {
		what := "it is not served"
		if kept {
			what = "the previous valid version is still served"
		}
		c.opts.Recorder.Eventf(ref, corev1.EventTypeWarning, EventReasonInvalid, "%s %s/%s is invalid and %s: %s",
			key.Kind, key.Namespace, key.Name, what, strings.Join(fields, "; "))
	}
}

func (c *Controller) notify(old, cur config.Config, ev model.Event) {
	for _, h := range c.handlers[cur.Kind] {
		h(old, cur, ev)
	}
}

// reindexLocked notes that kind's sorted list is stale. Must hold mu.
// The list is rebuilt by the next List of that kind, not here: an initial
// list of N objects then costs one sort instead of N rebuilds of a growing
// list (at 10,000 VirtualServices that was a minute of the first sync).
func (c *Controller) reindexLocked(kind schema.Kind) {
	c.stale[kind] = true
}

// sortedLocked returns kind's objects sorted by namespace then name,
// rebuilding the list if an event made it stale. Must hold mu for writing.
func (c *Controller) sortedLocked(kind schema.Kind) []config.Config {
	if !c.stale[kind] {
		return c.byKind[kind]
	}
	list := make([]config.Config, 0, len(c.byKind[kind])+1)
	for k, obj := range c.objects {
		if k.Kind == kind {
			list = append(list, obj)
		}
	}
	sortConfigs(list)
	c.byKind[kind] = list
	delete(c.stale, kind)
	return list
}
