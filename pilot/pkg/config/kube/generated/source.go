package generated

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// SourceOptions configure a Source.
type SourceOptions struct {
	// Name names the source in log lines ("Ingress", "Gateway API").
	Name string
	// ErrPrefix starts watch registration errors ("ingress").
	ErrPrefix string
	// Queue carries conversions and events: the control plane's shared
	// queue, run by its owner. Required.
	Queue *queue.Queue
	// Convert reads the informers' caches and converts everything. It runs
	// on the queue. An error (a cache that cannot be listed) keeps the
	// previous content. Required.
	Convert func() ([]config.Config, []*config.Error, error)
	// After, when set, holds the first conversion until it is closed: a
	// store Convert reads besides the informers (the Istio config store's
	// ServiceEntries for the Gateway API), so that the first conversion
	// already sees it.
	After <-chan struct{}
	// Clock paces the wait for the first sync; default the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Factory is an informer factory (client-go's or a generated client's).
type Factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// Source is the model.ConfigStoreController half of a controller that
// converts Kubernetes objects into Istio config: it registers the
// informers' handlers (Watch), queues one conversion per burst of changes
// (Schedule), runs the first one once every watch has synced or been
// refused, and serves the resulting Set to the model. A controller embeds
// it and adds the informers and the conversion.
type Source struct {
	opts    SourceOptions
	objects Set
	watches Watches

	pending  atomic.Bool // a conversion is queued
	loaded   atomic.Bool // the first conversion after sync has run
	synced   atomic.Bool
	syncedCh chan struct{}
}

// NewSource checks opts.
func NewSource(opts SourceOptions) (*Source, error) {
	if opts.Queue == nil || opts.Convert == nil {
		return nil, errors.New("generated: Queue and Convert are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Source{
		opts:     opts,
		watches:  Watches{Name: opts.ErrPrefix, Log: opts.Logger},
		syncedCh: make(chan struct{}),
	}, nil
}

// Watch adds h to inf (see Watches.Register).
func (s *Source) Watch(what string, inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	return s.watches.Register(what, inf, h)
}

// OnAnyChange is the handler of a kind every change of which matters.
func (s *Source) OnAnyChange() cache.ResourceEventHandlerFuncs { return OnAny(s.Schedule) }

// Schedule queues one conversion; changes arriving before it runs share it.
func (s *Source) Schedule() {
	if s.pending.Swap(true) {
		return
	}
	s.opts.Queue.Push(s.convert)
}

// convert runs on the queue: it converts everything, stores the result
// and tells the handlers what changed.
func (s *Source) convert() error {
	s.pending.Store(false)
	if !s.loaded.Load() {
		return nil // the first conversion runs once the informers synced
	}
	cfgs, errs, err := s.opts.Convert()
	if err != nil {
		return err
	}
	s.objects.Replace(cfgs, errs)
	return nil
}

// Run starts the factories, queues the first conversion once every watch
// has synced (or been refused), and returns when ctx is cancelled and
// every informer has stopped. Register the watches before.
func (s *Source) Run(ctx context.Context, factories []Factory) {
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	if !s.watches.WaitSynced(ctx, s.opts.Clock) {
		return
	}
	if s.opts.After != nil {
		select {
		case <-s.opts.After:
		case <-ctx.Done():
			return
		}
	}
	s.opts.Queue.Push(func() error {
		s.loaded.Store(true)
		err := s.convert()
		if !s.synced.Swap(true) {
			close(s.syncedCh)
			s.opts.Logger.Info(s.opts.Name+" config synced", "objects", len(s.List(schema.Gateway, ""))+len(s.List(schema.VirtualService, "")))
		}
		return err
	})
	<-ctx.Done()
}

// Get returns the generated object or nil. Do not mutate it.
func (s *Source) Get(kind schema.Kind, namespace, name string) *config.Config {
	return s.objects.Get(kind, namespace, name)
}

// List returns the generated objects of kind in namespace ("" for all),
// sorted by namespace then name.
func (s *Source) List(kind schema.Kind, namespace string) []config.Config {
	return s.objects.List(kind, namespace)
}

// ConfigErrors returns what the last conversion could not convert, and the
// watches the API server refuses.
func (s *Source) ConfigErrors() []*config.Error { return ConfigErrors(&s.objects, &s.watches) }

// RegisterEventHandler adds handler for kind (Gateway or VirtualService).
// It runs on the queue, ordered with events: the handler is first given an
// add for every object already converted.
func (s *Source) RegisterEventHandler(kind schema.Kind, handler model.EventHandler) {
	s.opts.Queue.Push(func() error {
		s.objects.Register(kind, handler)
		return nil
	})
}

// HasSynced reports whether the informers have listed everything and the
// resulting objects have been given to the handlers.
func (s *Source) HasSynced() bool { return s.synced.Load() }

// Synced is closed when HasSynced becomes true.
func (s *Source) Synced() <-chan struct{} { return s.syncedCh }
