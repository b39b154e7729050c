package generated

import (
	"cmp"
	"slices"
	"sync"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Set is the last conversion's output: the generated objects by key and
// the errors of the objects that were not (fully) converted. The zero
// value is empty and ready to use. Get, List and Errors may be called from
// any goroutine; Replace and Register must be called from one goroutine
// (the controller's queue), so that handlers see events in order.
type Set struct {
	mu       sync.RWMutex
	objects  map[config.Key]config.Config
	errs     []*config.Error
	handlers map[schema.Kind][]model.EventHandler
}

type event struct {
	old, cur config.Config
	ev       model.Event
}

// Replace stores cfgs and errs as the whole new content and gives the
// handlers of each kind an add, update or delete for every object that
// appeared, changed content (config.SameContent) or disappeared, sorted by
// kind, namespace and name. Handlers run after the new content is stored,
// outside the lock, so Get and List from a handler see it.
func (s *Set) Replace(cfgs []config.Config, errs []*config.Error) {
	next := make(map[config.Key]config.Config, len(cfgs))
	for _, cfg := range cfgs {
		next[cfg.Key()] = cfg
	}
	var events []event
	s.mu.Lock()
	for _, cfg := range cfgs {
		old, ok := s.objects[cfg.Key()]
		switch {
		case !ok:
			events = append(events, event{cur: cfg, ev: model.EventAdd})
		case !config.SameContent(old, cfg):
			events = append(events, event{old: old, cur: cfg, ev: model.EventUpdate})
		}
	}
	for key, old := range s.objects {
		if _, ok := next[key]; !ok {
			events = append(events, event{old: old, cur: old, ev: model.EventDelete})
		}
	}
	s.objects, s.errs = next, errs
	// A handler registered while events are delivered is not given them:
	// it gets the new content as adds from Register instead.
	handlers := make(map[schema.Kind][]model.EventHandler, len(s.handlers))
	for k, hs := range s.handlers {
		handlers[k] = slices.Clone(hs)
	}
	s.mu.Unlock()

	slices.SortFunc(events, func(a, b event) int { return CompareKey(a.cur.Key(), b.cur.Key()) })
	for _, e := range events {
		for _, h := range handlers[e.cur.Kind] {
			h(e.old, e.cur, e.ev)
		}
	}
}

// Register adds handler for kind and gives it an add for every object
// already stored, in List order. Call it from the goroutine that calls
// Replace.
func (s *Set) Register(kind schema.Kind, handler model.EventHandler) {
	s.mu.Lock()
	if s.handlers == nil {
		s.handlers = map[schema.Kind][]model.EventHandler{}
	}
	s.handlers[kind] = append(s.handlers[kind], handler)
	s.mu.Unlock()
	for _, obj := range s.List(kind, "") {
		handler(config.Config{}, obj, model.EventAdd)
	}
}

// Get returns the generated object or nil. Do not mutate it.
func (s *Set) Get(kind schema.Kind, namespace, name string) *config.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.objects[config.Key{Kind: kind, Namespace: namespace, Name: name}]
	if !ok {
		return nil
	}
	return &obj
}

// List returns the generated objects of kind in namespace ("" for all),
// sorted by namespace then name.
func (s *Set) List(kind schema.Kind, namespace string) []config.Config {
	s.mu.RLock()
	var out []config.Config
	for _, obj := range s.objects {
		if obj.Kind == kind && (namespace == "" || obj.Namespace == namespace) {
			out = append(out, obj)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b config.Config) int { return CompareKey(a.Key(), b.Key()) })
	return out
}

// Errors returns a copy of the last conversion's errors.
func (s *Set) Errors() []*config.Error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.errs)
}

// CompareKey orders keys by kind, namespace, then name.
func CompareKey(a, b config.Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
