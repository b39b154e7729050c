package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
)

// Resource is one generated resource, validated and marshaled once. It is
// immutable and shared: by every view of a push that contains it, by every
// response that carries it (SotW responses reference Any, delta responses
// reference Delta), and by later pushes while its content is unchanged.
// Its fields are read-only.
type Resource struct {
	Name string
	// Hash is the content hash of the deterministic encoding; it is the
	// resource's version in delta xDS.
	Hash  string
	Any   *anypb.Any
	Delta *discovery.Resource
	// Refs are the names this resource refers to, by type index (an EDS
	// cluster's load assignment, a listener's route configurations and
	// SDS secrets), sorted.
	Refs [NumTypes][]string
}

// TypeSet is one type's resources in a view: sorted by name, versioned by
// content. Immutable once built; its exported fields are read-only.
type TypeSet struct {
	Version string
	// Items are sorted by name; ByName indexes them.
	Items  []*Resource
	ByName map[string]*Resource
	// Anys are the items' Anys in order: the Resources of every wildcard
	// SotW response, shared by all of them.
	Anys []*anypb.Any
	// bodies are the serialized responses cut from this set, shared by
	// every stream sent one of them (see bodies.go). The only part of
	// a TypeSet that changes after it is built, with versions.
	bodies bodies
	// named is the last cut of named resources (see namedlists.go).
	named namedAnysMemo
	// versions maps every name to its content hash, built on first use:
	// the version map of a delta client that holds the whole set, which
	// each such stream gets a copy of (cloning a map is many times
	// cheaper than filling one).
	versionsOnce sync.Once
	versions     map[string]string
	// deltas are the items' delta wrappers in order, built on first use:
	// the Resources of a first delta response that carries the whole set
	// (wildcard, or naming every resource), shared by all of them.
	deltasOnce sync.Once
	deltas     []*discovery.Resource
	// base and changed, when set, say this set is base with the
	// resources named in changed replaced (same names otherwise): a
	// stream holding base is answered by looking at those names alone
	// (ChangedSince). Only partial endpoint pushes set them.
	base    *TypeSet
	changed []string // sorted
	// older are the sets before base, newest first (at most
	// MaxAncestors-1), each with the names changed from it to this set: a
	// stream that missed a push (its ACK was still on the way) is still
	// answered by looking at those names alone.
	older []ancestor
	// nameSizes are the names' sizes, for the client limits (NameStat).
	nameSizes nameStatOnce
	// edsCheck keeps the last edsErrors answer.
	edsCheck struct {
		mu   sync.Mutex
		with *TypeSet
		errs []string
	}
}

// ancestor is an earlier set and the names changed since it.
type ancestor struct {
	set     *TypeSet
	changed []string // sorted
}

// MaxAncestors bounds how many earlier sets a partial set remembers.
const MaxAncestors = 8

// ChangedSince returns the names whose resources differ between old and
// this set, sorted, when this set is old with only those replaced (same
// names otherwise); ok is false when old is not one of the sets it was
// built from. Computed once per push, read by every stream.
func (ts *TypeSet) ChangedSince(old *TypeSet) (changed []string, ok bool) {
	if old == nil || ts.base == nil {
		return nil, false
	}
	if old == ts.base {
		return ts.changed, true
	}
	for _, a := range ts.older {
		if a.set == old {
			return a.changed, true
		}
	}
	return nil, false
}

// VersionMap returns the set's name -> hash map. It is shared: copy it
// before handing it to anyone who may change it.
func (ts *TypeSet) VersionMap() map[string]string {
	ts.versionsOnce.Do(func() {
		ts.versions = make(map[string]string, len(ts.Items))
		for _, r := range ts.Items {
			ts.versions[r.Name] = r.Hash
		}
	})
	return ts.versions
}

// AllDeltas returns the items' delta wrappers in order (see deltas). The
// slice is shared: callers must not change it.
func (ts *TypeSet) AllDeltas() []*discovery.Resource {
	ts.deltasOnce.Do(func() {
		ts.deltas = make([]*discovery.Resource, len(ts.Items))
		for i, r := range ts.Items {
			ts.deltas[i] = r.Delta
		}
	})
	return ts.deltas[:len(ts.deltas):len(ts.deltas)]
}

// NewTypeSet builds a set from resources sorted by name with unique names.
// Its version hashes the (name, content hash) pairs, so equal content
// always gets the same version and any change gets a new one.
func NewTypeSet(items []*Resource) *TypeSet {
	ts := &TypeSet{Items: items, ByName: make(map[string]*Resource, len(items)), Anys: make([]*anypb.Any, len(items))}
	for i, r := range items {
		ts.ByName[r.Name] = r
		ts.Anys[i] = r.Any
	}
	ts.Version = setVersion(items)
	return ts
}

// PartialTypeSet is NewTypeSet(items) for items that are base's with those
// at the positions in at replaced by resources of the same names (changed
// are their names, sorted): base's name index and Anys are copied with
// those replaced rather than built again (at 6,000 endpoint assignments,
// building them was a fifth of a push of one service's endpoints). The
// set remembers base and changed (ChangedSince).
func PartialTypeSet(base *TypeSet, items []*Resource, at []int, changed []string) *TypeSet {
	ts := &TypeSet{Items: items, ByName: maps.Clone(base.ByName), Anys: slices.Clone(base.Anys)}
	for _, i := range at {
		ts.ByName[items[i].Name] = items[i]
		ts.Anys[i] = items[i].Any
	}
	ts.Version = setVersion(items)
	ts.base, ts.changed = base, changed
	return ts
}

// TakeAncestors takes over the sets before a partial set's base, with the
// names changed since each (prev's base and its own older ones, at most
// MaxAncestors in all), and makes the base forget them, so only the
// newest set holds earlier sets. It changes the base: the caller holds
// the lock under which its readers call ChangedSince.
func (ts *TypeSet) TakeAncestors() {
	p := ts.base
	if p == nil {
		return
	}
	if p.base != nil {
		ts.older = append(ts.older, ancestor{set: p.base, changed: unionNames(p.changed, ts.changed)})
		for _, a := range p.older {
			if len(ts.older) >= MaxAncestors-1 {
				break
			}
			ts.older = append(ts.older, ancestor{set: a.set, changed: unionNames(a.changed, ts.changed)})
		}
	}
	p.base, p.changed, p.older = nil, nil, nil
}

// unionNames returns the sorted names in a or b, both sorted.
func unionNames(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(slices.Concat(a, b))))
}

// nameStatOnce is a TypeSet's limits.NameStat, computed on first use.
type nameStatOnce struct {
	once sync.Once
	stat limits.NameStat
}

// NameStat returns the sizes of the set's names as the client limits
// count them. A set built from another with some resources replaced (a
// partial endpoint push) has its names.
func (ts *TypeSet) NameStat() limits.NameStat {
	ts.nameSizes.once.Do(func() {
		if ts.base != nil {
			ts.nameSizes.stat = ts.base.NameStat()
			return
		}
		st := limits.NameStat{Count: len(ts.Items)}
		for _, r := range ts.Items {
			st.Bytes += int64(len(r.Name)) + limits.NameOverheadBytes
			st.Longest = max(st.Longest, len(r.Name))
		}
		ts.nameSizes.stat = st
	})
	return ts.nameSizes.stat
}

// setVersion hashes every (name, content hash) pair of items, in order,
// written to the hash in 4 KiB pieces rather than three writes (and two
// copies) per item.
func setVersion(items []*Resource) string {
	h := sha256.New()
	b := make([]byte, 0, 4<<10)
	for _, r := range items {
		if len(b)+8+len(r.Name)+len(r.Hash) > cap(b) && len(b) > 0 {
			h.Write(b)
			b = b[:0]
		}
		b = binary.BigEndian.AppendUint64(b, uint64(len(r.Name)))
		b = append(b, r.Name...)
		b = append(b, r.Hash...)
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// emptySet is the set of a type a view has nothing of.
var emptySet = NewTypeSet(nil)

// Names returns the set's names, sorted.
func (ts *TypeSet) Names() []string {
	out := make([]string, len(ts.Items))
	for i, r := range ts.Items {
		out[i] = r.Name
	}
	return out
}

// HashOf returns a resource's content hash, "" when absent.
func (ts *TypeSet) HashOf(name string) string {
	if r := ts.ByName[name]; r != nil {
		return r.Hash
	}
	return ""
}

// View is everything one kind of proxy is served: one gateway group's
// listeners, routes and secrets with the push's clusters and endpoints, or
// the proxyless gRPC resources. Every proxy of a group shares one view.
// Immutable once built.
type View struct {
	// Sets are the view's resources by type index (never nil). Read-only.
	Sets [NumTypes]*TypeSet
}

// NewView is the view of these sets; a nil set is the type's empty set.
func NewView(clusters, endpoints, listeners, routes, secrets *TypeSet) *View {
	v := &View{Sets: [NumTypes]*TypeSet{clusters, endpoints, listeners, routes, secrets}}
	for i, s := range v.Sets {
		if s == nil {
			v.Sets[i] = emptySet
		}
	}
	return v
}

// Set returns the view's resources of a type URL (empty for types it does
// not serve).
func (v *View) Set(typeURL string) *TypeSet {
	if i, ok := TypeIndex(typeURL); ok {
		return v.Sets[i]
	}
	return emptySet
}

// Consistent checks what ADS needs for Envoy to warm: every EDS, RDS and
// SDS name referred to is in the view, and every endpoint, route and
// secret is referred to (a resource nobody names is never requested).
func (v *View) Consistent() error {
	var errs []string
	for _, t := range []int{EDS, RDS, SDS} {
		if t == EDS && !refersTo(v.Sets[LDS], EDS) {
			// Only clusters name endpoints, and every view of a push
			// shares both sets: checked once per pair (see edsErrors).
			errs = append(errs, v.Sets[CDS].edsErrors(v.Sets[EDS])...)
			continue
		}
		used := map[string]bool{}
		for _, from := range []int{CDS, LDS} {
			for _, r := range v.Sets[from].Items {
				for _, n := range r.Refs[t] {
					used[n] = true
					// A cluster's secret comes from the proxy's namespace
					// and may be missing there; translation reports it and
					// Envoy keeps only that cluster warming.
					if v.Sets[t].ByName[n] == nil && (from != CDS || t != SDS) {
						errs = append(errs, fmt.Sprintf("%s %s refers to missing %s %s", ShortType(Types[from]), r.Name, ShortType(Types[t]), n))
					}
				}
			}
		}
		for _, r := range v.Sets[t].Items {
			if !used[r.Name] {
				errs = append(errs, fmt.Sprintf("%s %s is not referred to", ShortType(Types[t]), r.Name))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("view is not consistent: %s", strings.Join(errs, "; "))
	}
	return nil
}

// refersTo reports whether any resource of ts refers to a resource of
// type t.
func refersTo(ts *TypeSet, t int) bool {
	for _, r := range ts.Items {
		if len(r.Refs[t]) > 0 {
			return true
		}
	}
	return false
}

// edsErrors are the consistency problems between clusters (ts) and
// endpoints, as View.Consistent reports them: an EDS name no assignment
// answers, an assignment no cluster names. Both sets are immutable, so the
// answer is kept for the last endpoints set asked about.
func (ts *TypeSet) edsErrors(endpoints *TypeSet) []string {
	ts.edsCheck.mu.Lock()
	defer ts.edsCheck.mu.Unlock()
	if ts.edsCheck.with == endpoints {
		return ts.edsCheck.errs
	}
	var errs []string
	used := make(map[string]bool, len(endpoints.Items))
	for _, r := range ts.Items {
		for _, n := range r.Refs[EDS] {
			used[n] = true
			if endpoints.ByName[n] == nil {
				errs = append(errs, fmt.Sprintf("%s %s refers to missing %s %s", ShortType(Types[CDS]), r.Name, ShortType(Types[EDS]), n))
			}
		}
	}
	for _, r := range endpoints.Items {
		if !used[r.Name] {
			errs = append(errs, fmt.Sprintf("%s %s is not referred to", ShortType(Types[EDS]), r.Name))
		}
	}
	ts.edsCheck.with, ts.edsCheck.errs = endpoints, errs
	return errs
}
