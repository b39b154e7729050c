package kube

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// serviceIndex indexes EndpointSlices by the "ns/name" of their Service.
const serviceIndex = "service"

// informerSet is the informers of one namespace ("" for all).
type informerSet struct {
	factory  *kclient.KubeFactory
	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	pods     cache.SharedIndexInformer
}

// watch is one informer's registration and RBAC state.
type watch struct {
	c         *Controller
	resource  string
	namespace string
	informer  cache.SharedIndexInformer
	reg       cache.ResourceEventHandlerRegistration
	// denied is set while the API server refuses to list or watch; rv is
	// the informer's resourceVersion then: when it moves, access is back.
	denied atomic.Bool
	mu     sync.Mutex
	msg    string
	rv     string
}

func (w *watch) isDenied() bool {
	if !w.denied.Load() {
		return false
	}
	w.mu.Lock()
	rv := w.rv
	w.mu.Unlock()
	if w.informer.LastSyncResourceVersion() != rv {
		w.allowed()
		return false
	}
	return true
}

func (c *Controller) newInformerSet(ns string) (*informerSet, error) {
	f := kclient.NewKubeFactory(c.opts.Client, c.opts.ResyncPeriod, ns, nil)
	s := &informerSet{
		factory:  f,
		services: f.Services().Informer(),
		slices:   f.EndpointSlices().Informer(),
		pods:     f.Pods().Informer(),
	}
	if err := s.slices.AddIndexers(cache.Indexers{serviceIndex: sliceServiceKey}); err != nil {
		return nil, fmt.Errorf("serviceregistry/kube: endpointslice index: %w", err)
	}
	// Only a pod's name and labels are needed; the rest would only cost
	// memory in the cache.
	if err := s.pods.SetTransform(stripPod); err != nil {
		return nil, fmt.Errorf("serviceregistry/kube: pod transform: %w", err)
	}
	for _, x := range []struct {
		resource string
		inf      cache.SharedIndexInformer
		h        cache.ResourceEventHandler
	}{
		{"services", s.services, c.serviceHandlers()},
		{"endpointslices.discovery.k8s.io", s.slices, c.sliceHandlers()},
		{"pods", s.pods, c.podHandlers()},
	} {
		w := &watch{c: c, resource: x.resource, namespace: ns, informer: x.inf}
		if err := x.inf.SetWatchErrorHandlerWithContext(w.onWatchError); err != nil {
			return nil, err
		}
		// Any event means the watch works again.
		reg, err := x.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.allowed(); x.h.OnAdd(obj, false) },
			UpdateFunc: func(o, n any) { w.allowed(); x.h.OnUpdate(o, n) },
			DeleteFunc: func(obj any) { w.allowed(); x.h.OnDelete(obj) },
		})
		if err != nil {
			return nil, err
		}
		w.reg = reg
		c.watches = append(c.watches, w)
	}
	return s, nil
}

func sliceServiceKey(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil, nil
	}
	return []string{es.Namespace + "/" + name}, nil
}

// stripPod keeps a Pod's identity and labels. Transforms run on freshly
// decoded objects, before they reach the cache, so changing it is safe.
func stripPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion, Labels: p.Labels,
	}}, nil
}

func objectKey(obj any) (string, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Key, true
	}
	k, err := cache.MetaNamespaceKeyFunc(obj)
	return k, err == nil
}

func sameVersion(o, n any) bool {
	a, ok1 := o.(metav1.Object)
	b, ok2 := n.(metav1.Object)
	return ok1 && ok2 && a.GetResourceVersion() != "" && a.GetResourceVersion() == b.GetResourceVersion()
}

func (c *Controller) serviceHandlers() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if key, ok := objectKey(obj); ok {
			c.queue.Push(func() error { c.recompute(key); return nil })
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(o, n any) {
			if !sameVersion(o, n) {
				enqueue(n)
			}
		},
		DeleteFunc: enqueue,
	}
}

func (c *Controller) sliceHandlers() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		keys, _ := sliceServiceKey(obj)
		for _, key := range keys {
			c.queue.Push(func() error { c.recompute(key); return nil })
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(o, n any) {
			if sameVersion(o, n) {
				return
			}
			// A slice moved to another service (it should not, but the
			// label is mutable) updates both.
			enqueue(o)
			enqueue(n)
		},
		DeleteFunc: enqueue,
	}
}

func (c *Controller) podHandlers() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, ok := objectKey(obj)
		if !ok {
			return
		}
		c.queue.Push(func() error {
			for _, svc := range sortedKeys(c.podServices[key]) {
				c.recompute(svc)
			}
			return nil
		})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(o, n any) {
			a, ok1 := o.(*corev1.Pod)
			b, ok2 := n.(*corev1.Pod)
			if ok1 && ok2 && maps.Equal(a.Labels, b.Labels) {
				return // only labels are read
			}
			enqueue(n)
		},
		DeleteFunc: enqueue,
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slicesSort(out)
	return out
}

// build reads Service key and its slices and pods from the caches.
func (c *Controller) build(key string) (*model.Service, []string) {
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	set := c.sets[ns]
	if set == nil {
		set = c.sets[""]
	}
	if set == nil {
		return nil, nil
	}
	obj, exists, err := set.services.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, nil
	}
	svc := obj.(*corev1.Service)
	objs, _ := set.slices.GetIndexer().ByIndex(serviceIndex, key)
	eps := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		eps = append(eps, o.(*discoveryv1.EndpointSlice))
	}
	// Sorted by name so that, when two slices list one address, the same
	// one wins every time.
	sortSlices(eps)
	return buildService(svc, eps, c.opts.DomainSuffix, func(podNS, name string) *podInfo {
		ps := c.sets[podNS]
		if ps == nil {
			ps = c.sets[""]
		}
		if ps == nil {
			return nil
		}
		o, ok, _ := ps.pods.GetIndexer().GetByKey(podNS + "/" + name)
		if !ok {
			return nil
		}
		return &podInfo{labels: o.(*corev1.Pod).Labels}
	})
}

func (w *watch) what() string {
	if w.namespace == "" {
		return w.resource + " in all namespaces"
	}
	return fmt.Sprintf("%s in namespace %q", w.resource, w.namespace)
}

func (w *watch) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	msg := fmt.Sprintf("cannot list/watch %s: %v; services there are not served until access is granted (check the RBAC of the control plane's service account, or --watch-namespaces)", w.what(), err)
	w.mu.Lock()
	changed := w.msg != msg
	w.msg = msg
	w.rv = w.informer.LastSyncResourceVersion()
	w.mu.Unlock()
	if !w.denied.Swap(true) || changed {
		w.c.log.Error("kubernetes watch forbidden", "resource", w.what(), "namespace", w.namespace, "error", err)
	}
}

func (w *watch) allowed() {
	if w.denied.Swap(false) {
		w.c.log.Info("kubernetes watch allowed again", "resource", w.what())
	}
}

func (w *watch) deniedError() *config.Error {
	if !w.isDenied() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return &config.Error{Source: "kube://" + w.namespace, Message: w.msg}
}
