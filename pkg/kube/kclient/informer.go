package kclient

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListWatcher is the list and watch half of a Resource.
type ListWatcher[L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewInformer is a SharedIndexInformer of one kind over r, indexed by
// namespace as client-go's generated informers are. tweak, if not nil,
// edits every list and watch's options (a label selector). client is the
// client r belongs to: one that says it cannot stream the initial list
// (client-go's fake clientsets, through kclienttest) is listed and then
// watched, as client-go's generated informers decide.
func NewInformer[L runtime.Object](r ListWatcher[L], example runtime.Object, resync time.Duration, tweak func(*metav1.ListOptions), client any) cache.SharedIndexInformer {
	edit := func(o *metav1.ListOptions) {
		if tweak != nil {
			tweak(o)
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			edit(&o)
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			edit(&o)
			return r.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), example, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// Nothing reads an object's managedFields or kubectl's copy of what
	// it last applied from a cache, and they are a good part of a small
	// object (a field set per writer; the whole object again, for a Secret
	// its data too). A status update without them leaves the server's as
	// they are. Callers may set another transform before the informer
	// starts.
	_ = inf.SetTransform(stripUnusedFields)
	return inf
}

// Factory holds informers of one namespace ("" for all) with one resync
// period and list options, one per kind, and starts and stops them
// together, as client-go's informer factories do.
type Factory struct {
	Namespace string
	Resync    time.Duration
	Tweak     func(*metav1.ListOptions)
	// Client is passed to NewInformer.
	Client any

	mu        sync.Mutex
	informers map[reflect.Type]cache.SharedIndexInformer
	started   map[reflect.Type]bool
	wg        sync.WaitGroup
	cancel    []context.CancelFunc
	shutdown  bool
}

// NewFactory is a Factory of client's kinds for namespace ns ("" for all).
func NewFactory(client any, ns string, resync time.Duration, tweak func(*metav1.ListOptions)) *Factory {
	return &Factory{Namespace: ns, Resync: resync, Tweak: tweak, Client: client}
}

// Informer returns the factory's informer of example's kind, building it
// with r on first use.
func Informer[L runtime.Object](f *Factory, r ListWatcher[L], example runtime.Object) cache.SharedIndexInformer {
	t := reflect.TypeOf(example)
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf := f.informers[t]; inf != nil {
		return inf
	}
	if f.informers == nil {
		f.informers = map[reflect.Type]cache.SharedIndexInformer{}
		f.started = map[reflect.Type]bool{}
	}
	inf := NewInformer(r, example, f.Resync, f.Tweak, f.Client)
	f.informers[t] = inf
	return inf
}

// Start runs the informers not yet started until stop is closed or
// Shutdown is called.
func (f *Factory) Start(stop <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	var ctx context.Context
	for t, inf := range f.informers {
		if f.started[t] {
			continue
		}
		if ctx == nil {
			// One context for the informers this call starts: done when
			// stop is closed or on Shutdown.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(wait.ContextForChannel(stop))
			f.cancel = append(f.cancel, cancel)
		}
		f.started[t] = true
		f.wg.Go(func() { inf.RunWithContext(ctx) })
	}
}

// WaitForCacheSync waits until every started informer has synced or stop
// is closed, and reports each kind's state.
func (f *Factory) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	f.mu.Lock()
	infs := map[reflect.Type]cache.SharedIndexInformer{}
	for t, inf := range f.informers {
		if f.started[t] {
			infs[t] = inf
		}
	}
	f.mu.Unlock()
	out := map[reflect.Type]bool{}
	for t, inf := range infs {
		out[t] = cache.WaitForCacheSync(stop, inf.HasSynced)
	}
	return out
}

// Shutdown stops every informer and waits for them to return. Start does
// nothing afterwards.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.shutdown = true
	cancels := f.cancel
	f.cancel = nil
	f.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	f.wg.Wait()
}

// LastAppliedAnnotation is where kubectl apply (client side) keeps a copy
// of the object it last applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// stripUnusedFields drops an object's managedFields and its
// LastAppliedAnnotation. Transforms run on objects just decoded, before
// they reach the cache, so changing them is safe.
func stripUnusedFields(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	if m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[LastAppliedAnnotation]; ok {
			delete(a, LastAppliedAnnotation)
			if len(a) == 0 {
				m.SetAnnotations(nil)
			}
		}
	}
	return obj, nil
}
