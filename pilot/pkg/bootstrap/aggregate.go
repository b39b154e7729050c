package bootstrap

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// aggregateStore merges several config sources into one store: the
// Istio CRDs and, in Kubernetes mode, whatever further sources are plugged
// in (Ingress translated to Gateways and VirtualServices, say). Objects
// are told apart by key; when two sources hold the same key the first
// source wins for Get, and both are listed, which the push context then
// reports as a clash where it matters.
type aggregateStore struct {
	sources []model.ConfigStoreController
	// reporters are the sources' (and registries') error reporters.
	reporters []model.ConfigErrorReporter
}

var (
	_ model.ConfigStoreController = (*aggregateStore)(nil)
	_ model.ConfigErrorReporter   = (*aggregateStore)(nil)
)

func newAggregateStore(sources []model.ConfigStoreController, extra ...model.ConfigErrorReporter) *aggregateStore {
	a := &aggregateStore{sources: sources}
	for _, s := range sources {
		if r, ok := s.(model.ConfigErrorReporter); ok {
			a.reporters = append(a.reporters, r)
		}
	}
	a.reporters = append(a.reporters, extra...)
	return a
}

func (a *aggregateStore) Get(kind schema.Kind, namespace, name string) *config.Config {
	for _, s := range a.sources {
		if c := s.Get(kind, namespace, name); c != nil {
			return c
		}
	}
	return nil
}

func (a *aggregateStore) List(kind schema.Kind, namespace string) []config.Config {
	if len(a.sources) == 1 {
		return a.sources[0].List(kind, namespace)
	}
	var out []config.Config
	for _, s := range a.sources {
		out = append(out, s.List(kind, namespace)...)
	}
	slices.SortStableFunc(out, func(x, y config.Config) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return out
}

func (a *aggregateStore) RegisterEventHandler(kind schema.Kind, h model.EventHandler) {
	for _, s := range a.sources {
		s.RegisterEventHandler(kind, h)
	}
}

// Run runs every source until ctx ends and returns when all have.
func (a *aggregateStore) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range a.sources {
		wg.Go(func() { s.Run(ctx) })
	}
	wg.Wait()
}

func (a *aggregateStore) HasSynced() bool {
	for _, s := range a.sources {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}

// ConfigErrors concatenates the sources' problems, sorted by source,
// object and field.
func (a *aggregateStore) ConfigErrors() []*config.Error {
	var out []*config.Error
	for _, r := range a.reporters {
		out = append(out, r.ConfigErrors()...)
	}
	if len(a.reporters) > 1 {
		slices.SortStableFunc(out, func(x, y *config.Error) int {
			return cmp.Or(cmp.Compare(x.Source, y.Source), cmp.Compare(x.Key.Kind, y.Key.Kind),
				cmp.Compare(x.Key.Namespace, y.Key.Namespace), cmp.Compare(x.Key.Name, y.Key.Name),
				cmp.Compare(x.Field, y.Field), cmp.Compare(x.Message, y.Message))
		})
	}
	return out
}
