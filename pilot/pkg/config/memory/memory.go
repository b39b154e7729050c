// Package memory is a read-only model.ConfigStore over a fixed list of
// objects: what tests, golden harnesses and benchmarks build a push context
// from without a file watcher or a cluster.
package memory

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Store holds objects indexed by kind, each kind sorted by namespace then
// name. It never changes after New, so it is safe for concurrent reads.
type Store struct {
	byKind map[schema.Kind][]config.Config
}

var _ model.ConfigStore = (*Store)(nil)

// New indexes configs. When two objects share a kind, namespace and name
// the later one wins, as a later apply would.
func New(configs []config.Config) *Store {
	s := &Store{byKind: map[schema.Kind][]config.Config{}}
	index := map[config.Key]int{}
	for _, c := range configs {
		k := c.Key()
		if i, ok := index[k]; ok {
			s.byKind[k.Kind][i] = c
			continue
		}
		index[k] = len(s.byKind[k.Kind])
		s.byKind[k.Kind] = append(s.byKind[k.Kind], c)
	}
	for _, cs := range s.byKind {
		slices.SortFunc(cs, compareName)
	}
	return s
}

func compareName(a, b config.Config) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// All yields every object, by kind, then namespace and name.
func (s *Store) All() iter.Seq[config.Config] {
	return func(yield func(config.Config) bool) {
		for _, k := range slices.Sorted(maps.Keys(s.byKind)) {
			for _, c := range s.byKind[k] {
				if !yield(c) {
					return
				}
			}
		}
	}
}

// With returns a store holding s's objects with put added or replacing
// those of the same key, and the objects of keys in del removed (a key in
// both is put). s is unchanged; the new store shares s's index of every
// kind neither touches, so a change to a few objects copies only their
// kinds' lists instead of indexing everything again.
func (s *Store) With(put []config.Config, del []config.Key) *Store {
	out := &Store{byKind: maps.Clone(s.byKind)}
	copied := map[schema.Kind]bool{}
	list := func(k schema.Kind) []config.Config {
		if !copied[k] {
			copied[k] = true
			out.byKind[k] = slices.Clone(out.byKind[k])
		}
		return out.byKind[k]
	}
	for _, k := range del {
		if _, ok := search(s.byKind[k.Kind], k.Namespace, k.Name); !ok {
			continue // nothing to copy the list for
		}
		cs := list(k.Kind)
		if i, ok := search(cs, k.Namespace, k.Name); ok {
			out.byKind[k.Kind] = slices.Delete(cs, i, i+1)
		}
	}
	for _, c := range put {
		k := c.Key()
		cs := list(k.Kind)
		if i, ok := search(cs, k.Namespace, k.Name); ok {
			cs[i] = c
		} else {
			out.byKind[k.Kind] = slices.Insert(cs, i, c)
		}
	}
	for k, cs := range out.byKind {
		if len(cs) == 0 {
			delete(out.byKind, k)
		}
	}
	return out
}

// Get returns the object or nil: a copy of the stored metadata sharing the
// stored spec, which must not be mutated.
func (s *Store) Get(kind schema.Kind, namespace, name string) *config.Config {
	cs := s.byKind[kind]
	i, ok := search(cs, namespace, name)
	if !ok {
		return nil
	}
	c := cs[i]
	return &c
}

// search finds namespace/name in cs, sorted by compareName: its index, or
// where it would go.
func search(cs []config.Config, namespace, name string) (int, bool) {
	return slices.BinarySearchFunc(cs, [2]string{namespace, name}, func(c config.Config, t [2]string) int {
		return cmp.Or(strings.Compare(c.Namespace, t[0]), strings.Compare(c.Name, t[1]))
	})
}

// List returns the objects of kind in namespace ("" for all), sorted by
// namespace then name. The slice is the caller's; the objects are shared.
func (s *Store) List(kind schema.Kind, namespace string) []config.Config {
	if namespace == "" {
		return slices.Clone(s.byKind[kind])
	}
	var out []config.Config
	for _, c := range s.byKind[kind] {
		if c.Namespace == namespace {
			out = append(out, c)
		}
	}
	return out
}
