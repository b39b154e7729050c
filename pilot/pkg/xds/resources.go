package xds

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Type indexes: a view holds one typeSet per served type, in the order ADS
// pushes them (clusters before endpoints, listeners before routes, secrets
// last: Envoy asks for them while warming listeners and clusters).
const (
	cdsIdx = iota
	edsIdx
	ldsIdx
	rdsIdx
	sdsIdx
	numTypes
)

// servedTypes are the type URLs served, indexed as above.
var servedTypes = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType, resource.SecretType}

// coreTypes are the types every Envoy proxy subscribes to; debug output
// shows them even before they are requested. Secrets are shown only once
// requested or present.
var coreTypes = servedTypes[:sdsIdx]

// typeNames are the short xDS type names used in metric labels, logs and
// debug output, as Istio uses them.
var typeNames = map[string]string{
	resource.ClusterType:  "cds",
	resource.EndpointType: "eds",
	resource.ListenerType: "lds",
	resource.RouteType:    "rds",
	resource.SecretType:   "sds",
}

// shortType names a type URL for labels; unknown types keep their URL.
func shortType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return typeURL
}

// metricType names a type URL for metric labels: one of the served types'
// short names, or "other" for any type a client made up, so clients cannot
// create label values (and series) at will.
func metricType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return "other"
}

// typeIndex returns the index of a served type URL.
func typeIndex(typeURL string) (int, bool) {
	i := slices.Index(servedTypes, typeURL)
	return i, i >= 0
}

// res is one generated resource, validated and marshaled once. It is
// immutable and shared: by every view of a push that contains it, by every
// response that carries it (SotW responses reference any, delta responses
// reference delta), and by later pushes while its content is unchanged.
type res struct {
	name string
	// hash is the content hash of the deterministic encoding; it is the
	// resource's version in delta xDS.
	hash  string
	any   *anypb.Any
	delta *discovery.Resource
	// refs are the names this resource refers to, by type index (an EDS
	// cluster's load assignment, a listener's route configurations and
	// SDS secrets), sorted.
	refs [numTypes][]string
}

// typeSet is one type's resources in a view: sorted by name, versioned by
// content. Immutable once built.
type typeSet struct {
	version string
	items   []*res
	byName  map[string]*res
	// anys are the items' Anys in order: the Resources of every wildcard
	// SotW response, shared by all of them.
	anys []*anypb.Any
	// bodies are the serialized responses cut from this set, shared by
	// every stream sent one of them (see wirecache.go). The only part of
	// a typeSet that changes after it is built, with versions.
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
	// (see cache.go). Only partial endpoint pushes set them.
	base    *typeSet
	changed []string // sorted
	// older are the sets before base, newest first (at most
	// maxAncestors-1), each with the names changed from it to this set: a
	// stream that missed a push (its ACK was still on the way) is still
	// answered by looking at those names alone.
	older []ancestor
	// nameSizes are the names' sizes, for the client limits (limits_served.go).
	nameSizes nameStatOnce
	// edsCheck keeps the last edsErrors answer.
	edsCheck struct {
		mu   sync.Mutex
		with *typeSet
		errs []string
	}
}

// ancestor is an earlier set and the names changed since it.
type ancestor struct {
	set     *typeSet
	changed []string // sorted
}

// maxAncestors bounds how many earlier sets a partial set remembers.
const maxAncestors = 8

// changedSince returns the names whose resources differ between old and
// this set, sorted, when this set is old with only those replaced (same
// names otherwise); ok is false when old is not one of the sets it was
// built from. Computed once per push, read by every stream.
func (ts *typeSet) changedSince(old *typeSet) (changed []string, ok bool) {
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

// versionMap returns the set's name -> hash map. It is shared: copy it
// before handing it to anyone who may change it.
func (ts *typeSet) versionMap() map[string]string {
	ts.versionsOnce.Do(func() {
		ts.versions = make(map[string]string, len(ts.items))
		for _, r := range ts.items {
			ts.versions[r.name] = r.hash
		}
	})
	return ts.versions
}

// allDeltas returns the items' delta wrappers in order (see deltas). The
// slice is shared: callers must not change it.
func (ts *typeSet) allDeltas() []*discovery.Resource {
	ts.deltasOnce.Do(func() {
		ts.deltas = make([]*discovery.Resource, len(ts.items))
		for i, r := range ts.items {
			ts.deltas[i] = r.delta
		}
	})
	return ts.deltas[:len(ts.deltas):len(ts.deltas)]
}

// newTypeSet builds a set from resources sorted by name with unique names.
// Its version hashes the (name, content hash) pairs, so equal content
// always gets the same version and any change gets a new one.
func newTypeSet(items []*res) *typeSet {
	ts := &typeSet{items: items, byName: make(map[string]*res, len(items)), anys: make([]*anypb.Any, len(items))}
	for i, r := range items {
		ts.byName[r.name] = r
		ts.anys[i] = r.any
	}
	ts.version = setVersion(items)
	return ts
}

// partialTypeSet is newTypeSet(items) for items that are base's with those
// at the positions in at replaced by resources of the same names: base's
// name index and Anys are copied with those replaced rather than built
// again (at 6,000 endpoint assignments, building them was a fifth of a
// push of one service's endpoints).
func partialTypeSet(base *typeSet, items []*res, at []int) *typeSet {
	ts := &typeSet{items: items, byName: maps.Clone(base.byName), anys: slices.Clone(base.anys)}
	for _, i := range at {
		ts.byName[items[i].name] = items[i]
		ts.anys[i] = items[i].any
	}
	ts.version = setVersion(items)
	return ts
}

// setVersion hashes every (name, content hash) pair of items, in order,
// written to the hash in 4 KiB pieces rather than three writes (and two
// copies) per item.
func setVersion(items []*res) string {
	h := sha256.New()
	b := make([]byte, 0, 4<<10)
	for _, r := range items {
		if len(b)+8+len(r.name)+len(r.hash) > cap(b) && len(b) > 0 {
			h.Write(b)
			b = b[:0]
		}
		b = binary.BigEndian.AppendUint64(b, uint64(len(r.name)))
		b = append(b, r.name...)
		b = append(b, r.hash...)
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// emptySet is the set of a type a view has nothing of.
var emptySet = newTypeSet(nil)

func (ts *typeSet) names() []string {
	out := make([]string, len(ts.items))
	for i, r := range ts.items {
		out[i] = r.name
	}
	return out
}

// hashOf returns a resource's content hash, "" when absent.
func (ts *typeSet) hashOf(name string) string {
	if r := ts.byName[name]; r != nil {
		return r.hash
	}
	return ""
}

// view is everything one kind of proxy is served: one gateway group's
// listeners, routes and secrets with the push's clusters and endpoints, or
// the proxyless gRPC resources. Every proxy of a group shares one view.
// Immutable once built.
type view struct {
	sets [numTypes]*typeSet
}

func newView(clusters, endpoints, listeners, routes, secrets *typeSet) *view {
	v := &view{sets: [numTypes]*typeSet{clusters, endpoints, listeners, routes, secrets}}
	for i, s := range v.sets {
		if s == nil {
			v.sets[i] = emptySet
		}
	}
	return v
}

// set returns the view's resources of a type URL (empty for types it does
// not serve).
func (v *view) set(typeURL string) *typeSet {
	if i, ok := typeIndex(typeURL); ok {
		return v.sets[i]
	}
	return emptySet
}

// consistent checks what ADS needs for Envoy to warm: every EDS, RDS and
// SDS name referred to is in the view, and every endpoint, route and
// secret is referred to (a resource nobody names is never requested).
func (v *view) consistent() error {
	var errs []string
	for _, t := range []int{edsIdx, rdsIdx, sdsIdx} {
		if t == edsIdx && !refersTo(v.sets[ldsIdx], edsIdx) {
			// Only clusters name endpoints, and every view of a push
			// shares both sets: checked once per pair (see edsErrors).
			errs = append(errs, v.sets[cdsIdx].edsErrors(v.sets[edsIdx])...)
			continue
		}
		used := map[string]bool{}
		for _, from := range []int{cdsIdx, ldsIdx} {
			for _, r := range v.sets[from].items {
				for _, n := range r.refs[t] {
					used[n] = true
					// A cluster's secret comes from the proxy's namespace
					// and may be missing there; translation reports it and
					// Envoy keeps only that cluster warming.
					if v.sets[t].byName[n] == nil && (from != cdsIdx || t != sdsIdx) {
						errs = append(errs, fmt.Sprintf("%s %s refers to missing %s %s", shortType(servedTypes[from]), r.name, shortType(servedTypes[t]), n))
					}
				}
			}
		}
		for _, r := range v.sets[t].items {
			if !used[r.name] {
				errs = append(errs, fmt.Sprintf("%s %s is not referred to", shortType(servedTypes[t]), r.name))
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
func refersTo(ts *typeSet, t int) bool {
	for _, r := range ts.items {
		if len(r.refs[t]) > 0 {
			return true
		}
	}
	return false
}

// edsErrors are the consistency problems between clusters (ts) and
// endpoints, as view.consistent reports them: an EDS name no assignment
// answers, an assignment no cluster names. Both sets are immutable, so the
// answer is kept for the last endpoints set asked about.
func (ts *typeSet) edsErrors(endpoints *typeSet) []string {
	ts.edsCheck.mu.Lock()
	defer ts.edsCheck.mu.Unlock()
	if ts.edsCheck.with == endpoints {
		return ts.edsCheck.errs
	}
	var errs []string
	used := make(map[string]bool, len(endpoints.items))
	for _, r := range ts.items {
		for _, n := range r.refs[edsIdx] {
			used[n] = true
			if endpoints.byName[n] == nil {
				errs = append(errs, fmt.Sprintf("%s %s refers to missing %s %s", shortType(servedTypes[cdsIdx]), r.name, shortType(servedTypes[edsIdx]), n))
			}
		}
	}
	for _, r := range endpoints.items {
		if !used[r.name] {
			errs = append(errs, fmt.Sprintf("%s %s is not referred to", shortType(servedTypes[edsIdx]), r.name))
		}
	}
	ts.edsCheck.with, ts.edsCheck.errs = endpoints, errs
	return errs
}

// internKey finds the resource a scope (the services, one gateway group,
// the proxyless resources) had under a name in the previous push.
type internKey struct {
	typeURL, scope, name string
}

// contentKey finds a resource by content, to share one Any between scopes
// that generate identical resources.
type contentKey struct {
	typeURL, name, hash string
}

// interner validates and marshals each resource once per content. Every
// generated resource is encoded (deterministically) into a scratch buffer
// to learn its content hash; when its scope had the same name and hash in
// the current or previous generation, that *res is reused as it is: no
// validation, no copy, no new Any, and proxies see the same pointers.
// Only new content is validated and copied into a new shared Any.
// (Comparing with proto.Equal instead of encoding was measured at 2.7
// times the cost of encoding: BenchmarkPush.) Generations turn per type,
// so an endpoints-only push keeps the other types' entries.
type interner struct {
	mu sync.Mutex
	// prev and cur are the resources of the previous and the current
	// generation, per type index.
	prev, cur [numTypes]map[internKey]*res
	byHash    [numTypes]map[contentKey]*res
	// marshaled is called once per new shared encoding (for the metric).
	marshaled func(typeURL string)
	scratch   sync.Pool
	// vhosts keeps virtual hosts' encodings for route configurations.
	vhosts vhostBytes
}

// maxScratch bounds the encoding buffers kept for reuse: a rare large
// resource gets a buffer of its own rather than one the pool then keeps.
const maxScratch = 256 << 10

func newInterner(marshaled func(typeURL string)) *interner {
	in := &interner{marshaled: marshaled}
	for i := range numTypes {
		in.cur[i] = map[internKey]*res{}
		in.byHash[i] = map[contentKey]*res{}
	}
	in.scratch.New = func() any { b := make([]byte, 0, 4096); return &b }
	return in
}

// rotate starts a new generation of the given types: what the last one
// used becomes the candidates for reuse, anything older is released.
func (in *interner) rotate(types ...int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, t := range types {
		in.prev[t] = in.cur[t]
		in.cur[t] = map[internKey]*res{}
		in.byHash[t] = map[contentKey]*res{}
		if t == rdsIdx {
			in.vhosts.rotate()
		}
	}
}

// trim drops from type t's content index what the current generation no
// longer uses, once the index holds over twice that: partial endpoint
// pushes intern new assignments without starting a generation, and under
// steady endpoint churn the index would otherwise keep every assignment
// ever built (15,000 after five minutes at 50 changes a second).
func (in *interner) trim(t int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.byHash[t]) <= 2*len(in.cur[t])+64 {
		return
	}
	keep := make(map[contentKey]*res, len(in.cur[t]))
	for k, r := range in.cur[t] {
		keep[contentKey{k.typeURL, r.name, r.hash}] = r
	}
	in.byHash[t] = keep
}

// intern returns the shared resource for msg, validating it and building
// its Any only when its content is new.
func (in *interner) intern(t int, scope, name string, msg proto.Message) (*res, error) {
	typeURL := servedTypes[t]
	k := internKey{typeURL, scope, name}
	// A route configuration is hashed from its parts (see routeConfigEnc);
	// anything else is encoded into a scratch buffer.
	var rcEnc *routeConfigEnc
	var b []byte
	var sum [sha256.Size]byte
	if rc, ok := msg.(*route.RouteConfiguration); ok {
		var err error
		if rcEnc, err = in.vhosts.encode(rc); err != nil {
			return nil, fmt.Errorf("cannot be encoded: %w", err)
		}
		sum = rcEnc.sum()
	} else {
		bp := in.scratch.Get().(*[]byte)
		defer func() {
			if cap(*bp) <= maxScratch {
				in.scratch.Put(bp)
			}
		}()
		var err error
		if b, err = (proto.MarshalOptions{Deterministic: true}).MarshalAppend((*bp)[:0], msg); err != nil {
			return nil, fmt.Errorf("cannot be encoded: %w", err)
		}
		*bp = b
		sum = sha256.Sum256(b)
	}
	hash := hex.EncodeToString(sum[:8])
	ck := contentKey{typeURL, name, hash}

	in.mu.Lock()
	r := in.byHash[t][ck]
	if r == nil {
		if p := in.prev[t][k]; p != nil && p.hash == hash {
			r = p
		}
	}
	if r != nil {
		in.cur[t][k] = r
		in.byHash[t][ck] = r
		in.mu.Unlock()
		return r, nil
	}
	in.mu.Unlock()

	// New content: validate, and copy the encoding into a shared Any.
	if rc, ok := msg.(*route.RouteConfiguration); ok {
		// Virtual hosts validated before are not validated again.
		if err := in.vhosts.validate(rc); err != nil {
			return nil, fmt.Errorf("fails Envoy validation and is not sent: %w", err)
		}
	} else if v, ok := msg.(interface{ ValidateAll() error }); !ok {
		return nil, fmt.Errorf("type %T cannot be validated", msg)
	} else if err := v.ValidateAll(); err != nil {
		return nil, fmt.Errorf("fails Envoy validation and is not sent: %w", err)
	}
	// A buffer of its own: the scratch buffer goes back to the pool.
	var value []byte
	if rcEnc != nil {
		value = rcEnc.bytes()
		in.vhosts.adopt(rcEnc, value)
	} else {
		value = slices.Clone(b)
	}
	a := &anypb.Any{TypeUrl: typeURL, Value: value}
	r = &res{name: name, hash: hash, any: a, refs: references(msg),
		delta: &discovery.Resource{Name: name, Version: hash, Resource: a}}
	if in.marshaled != nil {
		in.marshaled(typeURL)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if existing := in.byHash[t][ck]; existing != nil {
		r = existing
	}
	in.byHash[t][ck] = r
	in.cur[t][k] = r
	return r, nil
}

// prepare checks and interns generated resources of one type and scope. A
// resource that has no name, repeats an earlier name, or fails validation
// is dropped with an error: sending it would make Envoy reject the whole
// response. The result is sorted by name.
func prepare[T types.Resource](in *interner, t int, scope string, items []T) ([]*res, []*config.Error) {
	typeURL := servedTypes[t]
	out := make([]*res, 0, len(items))
	var errs []*config.Error
	seen := make(map[string]bool, len(items))
	for i, m := range items {
		name := cache.GetResourceName(m)
		switch {
		case name == "":
			errs = append(errs, generatedError(typeURL, fmt.Sprintf("#%d", i), "has no name"))
			continue
		case seen[name]:
			errs = append(errs, generatedError(typeURL, name, "is generated twice; the second is dropped"))
			continue
		}
		r, err := in.intern(t, scope, name, m)
		if err != nil {
			errs = append(errs, generatedError(typeURL, name, err.Error()))
			continue
		}
		seen[name] = true
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *res) int { return cmp.Compare(a.name, b.name) })
	return out, errs
}

// generatedError reports a problem with a resource the translators produced
// rather than with an input object; it has no config key.
func generatedError(typeURL, name, msg string) *config.Error {
	return &config.Error{Source: "generated " + shortType(typeURL) + " " + name, Message: msg}
}

// references returns the names a resource refers to, by type index.
func references(m proto.Message) [numTypes][]string {
	var out [numTypes][]string
	set := func(t int, names map[string]bool) {
		for n := range names {
			out[t] = append(out[t], n)
		}
		slices.Sort(out[t])
	}
	switch v := m.(type) {
	case *cluster.Cluster:
		refs := cache.GetResourceReferences(map[string]types.ResourceWithTTL{v.GetName(): {Resource: v}})
		set(edsIdx, refs[resource.EndpointType])
		secrets := map[string]bool{}
		upstreamSDSNames(v.GetTransportSocket(), secrets)
		set(sdsIdx, secrets)
	case *listener.Listener:
		refs := cache.GetResourceReferences(map[string]types.ResourceWithTTL{v.GetName(): {Resource: v}})
		routes := refs[resource.RouteType]
		// An API listener (proxyless gRPC) carries its connection manager
		// outside any filter chain.
		if a := v.GetApiListener().GetApiListener(); a != nil {
			m := &hcm.HttpConnectionManager{}
			if a.UnmarshalTo(m) == nil && m.GetRds().GetRouteConfigName() != "" {
				if routes == nil {
					routes = map[string]bool{}
				}
				routes[m.GetRds().GetRouteConfigName()] = true
			}
		}
		set(rdsIdx, routes)
		secrets := map[string]bool{}
		for _, fc := range append(slices.Clone(v.GetFilterChains()), v.GetDefaultFilterChain()) {
			sdsNames(fc.GetTransportSocket(), secrets)
		}
		set(sdsIdx, secrets)
	}
	return out
}

// sdsNames adds the SDS secrets a downstream TLS transport socket fetches
// over ADS. Secrets from another SDS source (a node agent) are not this
// server's to serve.
func sdsNames(ts *core.TransportSocket, out map[string]bool) {
	if ts.GetTypedConfig() == nil {
		return
	}
	tc := &tlsv3.DownstreamTlsContext{}
	if ts.GetTypedConfig().UnmarshalTo(tc) != nil {
		return
	}
	commonSDSNames(tc.GetCommonTlsContext(), out)
}

// prune makes referring and referenced resources consistent, as ADS
// requires: a referrer naming a missing resource is dropped (Envoy would
// wait for it forever), and a referenced resource nobody names is dropped
// (no proxy would ask for it). targets maps a type index to its resources;
// the pruned targets are returned in the same map.
func prune(referrers []*res, referrerType int, targets map[int][]*res) ([]*res, map[int][]*res, []*config.Error) {
	var errs []*config.Error
	have := map[int]map[string]bool{}
	for t, rs := range targets {
		have[t] = make(map[string]bool, len(rs))
		for _, r := range rs {
			have[t][r.name] = true
		}
	}
	used := map[int]map[string]bool{}
	keep := referrers[:0:0]
	for _, r := range referrers {
		var missing []string
		for _, t := range slices.Sorted(maps.Keys(targets)) {
			var names []string
			for _, n := range r.refs[t] {
				if !have[t][n] {
					names = append(names, n)
				}
			}
			if len(names) > 0 {
				missing = append(missing, fmt.Sprintf("%s %v", shortType(servedTypes[t]), names))
			}
		}
		if len(missing) > 0 {
			errs = append(errs, generatedError(servedTypes[referrerType], r.name,
				fmt.Sprintf("refers to %s, which was not generated or was dropped; it is not sent", strings.Join(missing, ", "))))
			continue
		}
		for t := range targets {
			if used[t] == nil {
				used[t] = map[string]bool{}
			}
			for _, n := range r.refs[t] {
				used[t][n] = true
			}
		}
		keep = append(keep, r)
	}
	out := make(map[int][]*res, len(targets))
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		kept := targets[t][:0:0]
		for _, r := range targets[t] {
			if !used[t][r.name] {
				errs = append(errs, generatedError(servedTypes[t], r.name,
					"is not referred to by any "+shortType(servedTypes[referrerType])+" that is sent; it is not sent"))
				continue
			}
			kept = append(kept, r)
		}
		out[t] = kept
	}
	return keep, out, errs
}

// serviceResources validates, interns and prunes a BuildServices result
// into the cluster and endpoint sets every view of one push shares.
func serviceResources(in *interner, scope string, r ServiceResources) (clusters, endpoints *typeSet, errs []*config.Error) {
	cs, e1 := prepare(in, cdsIdx, scope, r.Clusters)
	es, e2 := prepare(in, edsIdx, scope, r.Endpoints)
	cs, t, e3 := prune(cs, cdsIdx, map[int][]*res{edsIdx: es})
	return newTypeSet(cs), newTypeSet(t[edsIdx]), slices.Concat(r.Errors, e1, e2, e3)
}

// endpointResources interns the load assignments of an endpoints-only push
// against the clusters of the last full push. Assignments of clusters that
// are not there are dropped silently, as BuildServices drops them; ok is
// false when a cluster's assignment is missing, which only a full push can
// resolve.
func endpointResources(in *interner, scope string, clusters *typeSet, eps EndpointResources) (endpoints *typeSet, errs []*config.Error, ok bool) {
	es, errs := prepare(in, edsIdx, scope, eps.Endpoints)
	want := map[string]bool{}
	for _, c := range clusters.items {
		for _, n := range c.refs[edsIdx] {
			want[n] = true
		}
	}
	kept := es[:0:0]
	for _, e := range es {
		if want[e.name] {
			kept = append(kept, e)
			delete(want, e.name)
		}
	}
	return newTypeSet(kept), slices.Concat(eps.Errors, errs), len(want) == 0
}

// gatewayResources validates, interns and prunes a BuildGateway result.
func gatewayResources(in *interner, scope string, r GatewayResources) (listeners, routes, secrets *typeSet, errs []*config.Error) {
	ls, e1 := prepare(in, ldsIdx, scope, r.Listeners)
	rs, e2 := prepare(in, rdsIdx, scope, r.Routes)
	ss, e3 := prepare(in, sdsIdx, scope, r.Secrets)
	ls, t, e4 := prune(ls, ldsIdx, map[int][]*res{rdsIdx: rs, sdsIdx: ss})
	return newTypeSet(ls), newTypeSet(t[rdsIdx]), newTypeSet(t[sdsIdx]), slices.Concat(r.Errors, e1, e2, e3, e4)
}

// commonSDSNames adds the SDS secrets a TLS context (downstream or
// upstream) fetches over ADS: its certificates and its validation context.
func commonSDSNames(common *tlsv3.CommonTlsContext, out map[string]bool) {
	add := func(c *tlsv3.SdsSecretConfig) {
		if c.GetName() != "" && c.GetSdsConfig().GetAds() != nil {
			out[c.GetName()] = true
		}
	}
	for _, c := range common.GetTlsCertificateSdsSecretConfigs() {
		add(c)
	}
	add(common.GetValidationContextSdsSecretConfig())
	add(common.GetCombinedValidationContext().GetValidationContextSdsSecretConfig())
}
