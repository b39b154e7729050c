package snapshot

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
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

// Interner validates and marshals each resource once per content. Every
// generated resource is encoded (deterministically) into a scratch buffer
// to learn its content hash; when its scope had the same name and hash in
// the current or previous generation, that *Resource is reused as it is: no
// validation, no copy, no new Any, and proxies see the same pointers.
// Only new content is validated and copied into a new shared Any.
// (Comparing with proto.Equal instead of encoding was measured at 2.7
// times the cost of encoding: BenchmarkPush.) Generations turn per type,
// so an endpoints-only push keeps the other types' entries.
type Interner struct {
	mu sync.Mutex
	// prev and cur are the resources of the previous and the current
	// generation, per type index.
	prev, cur [NumTypes]map[internKey]*Resource
	byHash    [NumTypes]map[contentKey]*Resource
	// marshaled is called once per new shared encoding (for the metric).
	marshaled func(typeURL string)
	scratch   sync.Pool
	// vhosts keeps virtual hosts' encodings for route configurations.
	vhosts vhostBytes
}

// maxScratch bounds the encoding buffers kept for reuse: a rare large
// resource gets a buffer of its own rather than one the pool then keeps.
const maxScratch = 256 << 10

// NewInterner returns an empty interner; marshaled, when set, is called
// with the type URL of each new shared encoding (for a metric).
func NewInterner(marshaled func(typeURL string)) *Interner {
	in := &Interner{marshaled: marshaled}
	for i := range NumTypes {
		in.cur[i] = map[internKey]*Resource{}
		in.byHash[i] = map[contentKey]*Resource{}
	}
	in.scratch.New = func() any { b := make([]byte, 0, 4096); return &b }
	return in
}

// Rotate starts a new generation of the given types: what the last one
// used becomes the candidates for reuse, anything older is released.
func (in *Interner) Rotate(types ...int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, t := range types {
		in.prev[t] = in.cur[t]
		in.cur[t] = map[internKey]*Resource{}
		in.byHash[t] = map[contentKey]*Resource{}
		if t == RDS {
			in.vhosts.rotate()
		}
	}
}

// Trim drops from type t's content index what the current generation no
// longer uses, once the index holds over twice that: partial endpoint
// pushes intern new assignments without starting a generation, and under
// steady endpoint churn the index would otherwise keep every assignment
// ever built (15,000 after five minutes at 50 changes a second).
func (in *Interner) Trim(t int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.byHash[t]) <= 2*len(in.cur[t])+64 {
		return
	}
	keep := make(map[contentKey]*Resource, len(in.cur[t]))
	for k, r := range in.cur[t] {
		keep[contentKey{k.typeURL, r.Name, r.Hash}] = r
	}
	in.byHash[t] = keep
}

// intern returns the shared resource for msg, validating it and building
// its Any only when its content is new.
func (in *Interner) intern(t int, scope, name string, msg proto.Message) (*Resource, error) {
	typeURL := Types[t]
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
		if p := in.prev[t][k]; p != nil && p.Hash == hash {
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
	r = &Resource{Name: name, Hash: hash, Any: a, Refs: references(msg),
		Delta: &discovery.Resource{Name: name, Version: hash, Resource: a}}
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

// Prepare checks and interns generated resources of one type and scope. A
// resource that has no name, repeats an earlier name, or fails validation
// is dropped with an error: sending it would make Envoy reject the whole
// response. The result is sorted by name.
func Prepare[T types.Resource](in *Interner, t int, scope string, items []T) ([]*Resource, []*config.Error) {
	typeURL := Types[t]
	out := make([]*Resource, 0, len(items))
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
	slices.SortFunc(out, func(a, b *Resource) int { return cmp.Compare(a.Name, b.Name) })
	return out, errs
}

// generatedError reports a problem with a resource the translators produced
// rather than with an input object; it has no config key.
func generatedError(typeURL, name, msg string) *config.Error {
	return &config.Error{Source: "generated " + ShortType(typeURL) + " " + name, Message: msg}
}

// references returns the names a resource refers to, by type index.
func references(m proto.Message) [NumTypes][]string {
	var out [NumTypes][]string
	set := func(t int, names map[string]bool) {
		for n := range names {
			out[t] = append(out[t], n)
		}
		slices.Sort(out[t])
	}
	switch v := m.(type) {
	case *cluster.Cluster:
		refs := cache.GetResourceReferences(map[string]types.ResourceWithTTL{v.GetName(): {Resource: v}})
		set(EDS, refs[resource.EndpointType])
		secrets := map[string]bool{}
		upstreamSDSNames(v.GetTransportSocket(), secrets)
		set(SDS, secrets)
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
		set(RDS, routes)
		secrets := map[string]bool{}
		for _, fc := range append(slices.Clone(v.GetFilterChains()), v.GetDefaultFilterChain()) {
			sdsNames(fc.GetTransportSocket(), secrets)
		}
		set(SDS, secrets)
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
func prune(referrers []*Resource, referrerType int, targets map[int][]*Resource) ([]*Resource, map[int][]*Resource, []*config.Error) {
	var errs []*config.Error
	have := map[int]map[string]bool{}
	for t, rs := range targets {
		have[t] = make(map[string]bool, len(rs))
		for _, r := range rs {
			have[t][r.Name] = true
		}
	}
	used := map[int]map[string]bool{}
	keep := referrers[:0:0]
	for _, r := range referrers {
		var missing []string
		for _, t := range slices.Sorted(maps.Keys(targets)) {
			var names []string
			for _, n := range r.Refs[t] {
				if !have[t][n] {
					names = append(names, n)
				}
			}
			if len(names) > 0 {
				missing = append(missing, fmt.Sprintf("%s %v", ShortType(Types[t]), names))
			}
		}
		if len(missing) > 0 {
			errs = append(errs, generatedError(Types[referrerType], r.Name,
				fmt.Sprintf("refers to %s, which was not generated or was dropped; it is not sent", strings.Join(missing, ", "))))
			continue
		}
		for t := range targets {
			if used[t] == nil {
				used[t] = map[string]bool{}
			}
			for _, n := range r.Refs[t] {
				used[t][n] = true
			}
		}
		keep = append(keep, r)
	}
	out := make(map[int][]*Resource, len(targets))
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		kept := targets[t][:0:0]
		for _, r := range targets[t] {
			if !used[t][r.Name] {
				errs = append(errs, generatedError(Types[t], r.Name,
					"is not referred to by any "+ShortType(Types[referrerType])+" that is sent; it is not sent"))
				continue
			}
			kept = append(kept, r)
		}
		out[t] = kept
	}
	return keep, out, errs
}

// ServiceSets validates, interns and prunes the clusters and endpoints a
// service translation produced into the sets every view of one push
// shares.
func ServiceSets(in *Interner, scope string, clusters []*cluster.Cluster, endpoints []*endpoint.ClusterLoadAssignment) (cs, es *TypeSet, errs []*config.Error) {
	cl, e1 := Prepare(in, CDS, scope, clusters)
	en, e2 := Prepare(in, EDS, scope, endpoints)
	cl, t, e3 := prune(cl, CDS, map[int][]*Resource{EDS: en})
	return NewTypeSet(cl), NewTypeSet(t[EDS]), slices.Concat(e1, e2, e3)
}

// EndpointSet interns the load assignments of an endpoints-only push
// against the clusters of the last full push. Assignments of clusters that
// are not there are dropped silently, as a service translation drops them;
// ok is false when a cluster's assignment is missing, which only a full
// push can resolve.
func EndpointSet(in *Interner, scope string, clusters *TypeSet, endpoints []*endpoint.ClusterLoadAssignment) (es *TypeSet, errs []*config.Error, ok bool) {
	en, errs := Prepare(in, EDS, scope, endpoints)
	want := map[string]bool{}
	for _, c := range clusters.Items {
		for _, n := range c.Refs[EDS] {
			want[n] = true
		}
	}
	kept := en[:0:0]
	for _, e := range en {
		if want[e.Name] {
			kept = append(kept, e)
			delete(want, e.Name)
		}
	}
	return NewTypeSet(kept), errs, len(want) == 0
}

// GatewaySets validates, interns and prunes the listeners, routes and
// secrets a gateway translation produced.
func GatewaySets(in *Interner, scope string, listeners []*listener.Listener, routes []*route.RouteConfiguration, secrets []*tlsv3.Secret) (ls, rs, ss *TypeSet, errs []*config.Error) {
	l, e1 := Prepare(in, LDS, scope, listeners)
	r, e2 := Prepare(in, RDS, scope, routes)
	sc, e3 := Prepare(in, SDS, scope, secrets)
	l, t, e4 := prune(l, LDS, map[int][]*Resource{RDS: r, SDS: sc})
	return NewTypeSet(l), NewTypeSet(t[RDS]), NewTypeSet(t[SDS]), slices.Concat(e1, e2, e3, e4)
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

// upstreamSDSNames adds the SDS secrets an upstream TLS transport socket
// (a cluster's, from a DestinationRule credentialName) fetches over ADS:
// the client certificate and the CA.
func upstreamSDSNames(ts *core.TransportSocket, out map[string]bool) {
	if ts.GetTypedConfig() == nil {
		return
	}
	tc := &tlsv3.UpstreamTlsContext{}
	if ts.GetTypedConfig().UnmarshalTo(tc) != nil {
		return
	}
	commonSDSNames(tc.GetCommonTlsContext(), out)
}

// Sizes returns how many resources of type t the current generation holds
// and how many the index by content holds (for tests and debugging).
func (in *Interner) Sizes(t int) (current, indexed int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.cur[t]), len(in.byHash[t])
}

// PatchedServiceSets interns clusters a gateway group patched (EnvoyFilter
// CLUSTER patches) against the push's endpoints: the group's own cluster
// set, and the endpoints set cut to the load assignments those clusters
// name (the shared resources, not copies). A cluster naming an assignment
// the push has not is dropped, as in a translation.
func PatchedServiceSets(in *Interner, scope string, clusters []*cluster.Cluster, endpoints *TypeSet) (cs, es *TypeSet, errs []*config.Error) {
	cl, e1 := Prepare(in, CDS, scope, clusters)
	var en []*Resource
	if endpoints != nil {
		en = endpoints.Items
	}
	cl, t, e2 := prune(cl, CDS, map[int][]*Resource{EDS: en})
	return NewTypeSet(cl), NewTypeSet(t[EDS]), slices.Concat(e1, e2)
}
