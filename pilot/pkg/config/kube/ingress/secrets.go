package ingress

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/generated"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// SecretsOptions configure Secrets.
type SecretsOptions struct {
	// Client reads Secrets. Required.
	Client kclient.Kube
	// Namespaces limits the watch; empty is all.
	Namespaces []string
	// OnChange is called (from an informer goroutine) when a Secret holding
	// a certificate and key appears, changes them, or goes: the gateways
	// using it need a push. Other Secrets (tokens, Helm releases) never
	// call it.
	OnChange func(namespace, name string)
	// OnAnyChange, when set, is called (from an informer goroutine) when
	// any Secret is added or deleted, or its type or data change: the
	// Gateway API source resolves certificateRefs against the Secret
	// itself, a malformed one included.
	OnAnyChange func(namespace, name string)
	// Clock paces the wait for the first sync; default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Secrets is the model.SecretStore of Kubernetes mode: the certificates of
// HTTPS Gateway servers (credentialName) and Ingress TLS entries, read
// from a Secret informer's cache. Safe for concurrent use.
type Secrets struct {
	opts      SecretsOptions
	factories []*kclient.KubeFactory
	listers   map[string]listerscorev1.SecretLister // by namespace; "" for all
	watches   generated.Watches
}

var _ model.SecretStore = (*Secrets)(nil)

// NewSecrets sets up the informers; nothing is watched before Run.
func NewSecrets(opts SecretsOptions) (*Secrets, error) {
	if opts.Client == nil {
		return nil, errors.New("ingress: Secrets needs a Client")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Secrets{opts: opts, listers: map[string]listerscorev1.SecretLister{}}
	namespaces := slices.Clone(opts.Namespaces)
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.changed(nil, obj) },
		UpdateFunc: s.changed,
		DeleteFunc: func(obj any) { s.changed(obj, nil) },
	}
	s.watches = generated.Watches{Name: "ingress", Log: opts.Logger.With("source", "secrets")}
	for _, ns := range namespaces {
		f := kclient.NewKubeFactory(opts.Client, 0, ns, nil)
		s.factories = append(s.factories, f)
		inf := f.Secrets()
		s.listers[ns] = inf.Lister()
		if err := s.watches.Register("Secrets in "+generated.NamespaceName(ns), inf.Informer(), h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Secrets) changed(old, cur any) {
	if s.opts.OnAnyChange != nil {
		if sec := anyChange(old, cur); sec != nil {
			s.opts.OnAnyChange(sec.Namespace, sec.Name)
		}
	}
	if !tlsMaterialChanged(old, cur) {
		return // not a certificate or CA, or metadata only
	}
	obj := cur
	if obj == nil {
		obj = old
	}
	if t, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		obj = t.Obj
	}
	if sec, isSecret := obj.(*corev1.Secret); isSecret && s.opts.OnChange != nil {
		s.opts.OnChange(sec.Namespace, sec.Name)
	}
}

// anyChange is the Secret of an event when it was added or deleted, or
// its type or data changed; nil for a metadata-only update.
func anyChange(old, cur any) *corev1.Secret {
	unwrap := func(o any) *corev1.Secret {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		sec, _ := o.(*corev1.Secret)
		return sec
	}
	a, b := unwrap(old), unwrap(cur)
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Type != b.Type || !maps.EqualFunc(a.Data, b.Data, bytes.Equal):
		return b
	}
	return nil
}

// Get returns Secret namespace/name from the informer's cache, nil when
// there is none. Do not mutate it.
func (s *Secrets) Get(namespace, name string) *corev1.Secret {
	l, found := s.listers[namespace]
	if !found {
		l, found = s.listers[""]
	}
	if !found {
		return nil
	}
	sec, err := l.Secrets(namespace).Get(name)
	if err != nil {
		return nil
	}
	return sec
}

// Secret returns the certificate and key of Secret namespace/name.
func (s *Secrets) Secret(namespace, name string) (cert, key []byte, ok bool) {
	l, found := s.listers[namespace]
	if !found {
		l, found = s.listers[""]
	}
	if !found {
		return nil, nil, false
	}
	sec, err := l.Secrets(namespace).Get(name)
	if err != nil {
		return nil, nil, false
	}
	return model.TLSKeyPair(sec.Data)
}

// HasSynced reports whether every watch has listed its Secrets (or been
// refused by the RBAC).
func (s *Secrets) HasSynced() bool { return s.watches.Synced() }

// Run watches until ctx is cancelled and the informers have stopped.
func (s *Secrets) Run(ctx context.Context) {
	for _, f := range s.factories {
		f.Start(ctx.Done())
	}
	<-ctx.Done()
	for _, f := range s.factories {
		f.Shutdown()
	}
}

// WaitForSync blocks until HasSynced or ctx is done, and reports which.
func (s *Secrets) WaitForSync(ctx context.Context) bool {
	return s.watches.WaitSynced(ctx, s.opts.Clock)
}
