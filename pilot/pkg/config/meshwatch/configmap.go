package meshwatch

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// ConfigMapOptions configure a ConfigMapWatcher.
type ConfigMapOptions struct {
	// Client reads the ConfigMap. Required.
	Client kclient.Kube
	// Namespace is the server's own namespace (--pod-namespace), where
	// istiod reads its ConfigMap. Required.
	Namespace string
	// Name is the ConfigMap's name (default mesh.ConfigMapName, "istio").
	Name string
	// Tracker receives each new content. Required.
	Tracker *Tracker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// ConfigMapWatcher watches the mesh key of one ConfigMap, as istiod does
// when it has no mesh config file: an informer on that one object (a
// field selector on its name, so RBAC on ConfigMaps of one namespace
// suffices and no other ConfigMap is cached). A missing ConfigMap or key
// is istiod's defaults; a refused content keeps the config in force.
type ConfigMapWatcher struct {
	opts ConfigMapOptions
	src  mesh.Source
	inf  cache.SharedIndexInformer

	// denied is set once RBAC refuses the watch: the server then starts
	// with istiod's defaults instead of never becoming ready, and the
	// informer keeps retrying.
	denied atomic.Bool

	mu   sync.Mutex
	last *string // the content last handed to the Tracker; nil before the first
}

// NewConfigMap builds the watcher; Run starts it.
func NewConfigMap(opts ConfigMapOptions) (*ConfigMapWatcher, error) {
	if opts.Name == "" {
		opts.Name = mesh.ConfigMapName
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := &ConfigMapWatcher{opts: opts, src: mesh.ConfigMapSource(opts.Namespace, opts.Name)}
	sel := fields.OneTermEqualSelector("metadata.name", opts.Name).String()
	w.inf = kclient.NewInformer(opts.Client.CoreV1().ConfigMaps(opts.Namespace), &corev1.ConfigMap{}, 0,
		func(o *metav1.ListOptions) { o.FieldSelector = sel }, opts.Client)
	_ = w.inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			if !w.denied.Swap(true) { // one line, not one per retry
				opts.Logger.Error("cannot watch the mesh config ConfigMap (RBAC: get, list and watch configmaps in this namespace); serving with the mesh config in force (at start istiod's defaults) and retrying",
					"configMap", opts.Namespace+"/"+opts.Name, "error", err)
			}
			return
		}
		opts.Logger.Debug("mesh config ConfigMap watch failed; retrying", "error", err)
	})
	if _, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.set(obj) },
		UpdateFunc: func(_, obj any) { w.set(obj) },
		DeleteFunc: func(any) { w.update("") },
	}); err != nil {
		return nil, err
	}
	return w, nil
}

// Run runs the informer until ctx ends.
func (w *ConfigMapWatcher) Run(ctx context.Context) { w.inf.RunWithContext(ctx) }

// HasSynced reports whether the ConfigMap (or its absence) has been read,
// so the first push can wait for it.
// A watch RBAC refuses counts as read (istiod's defaults), so that a
// missing Role rule costs the mesh config, not the whole server.
func (w *ConfigMapWatcher) HasSynced() bool { return w.inf.HasSynced() || w.denied.Load() }

func (w *ConfigMapWatcher) set(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm.Name != w.opts.Name {
		return
	}
	w.update(cm.Data[mesh.ConfigMapKey]) // no key: "", istiod's defaults
}

// update hands data to the Tracker when it differs from the last content.
func (w *ConfigMapWatcher) update(data string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil && *w.last == data {
		return
	}
	w.last = &data
	src := w.src
	if data == "" {
		src = mesh.Source{} // no ConfigMap or no key: say "defaults", as they are
	}
	_ = w.opts.Tracker.Update(src, []byte(data)) // logged and recorded by the Tracker
}
