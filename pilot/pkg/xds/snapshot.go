package xds

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// typeNames are the short xDS type names used in metric labels, logs and
// debug output, as Istio uses them.
var typeNames = map[string]string{
	resource.ClusterType:  "cds",
	resource.EndpointType: "eds",
	resource.ListenerType: "lds",
	resource.RouteType:    "rds",
}

// servedTypes are the types in a snapshot, in the order ADS sends them.
var servedTypes = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType}

// shortType names a type URL for labels; unknown types keep their URL.
func shortType(typeURL string) string {
	if n, ok := typeNames[typeURL]; ok {
		return n
	}
	return typeURL
}

// validResource is a generated resource that passed ValidateAll, with its
// deterministic encoding (for the version hash).
type validResource struct {
	name    string
	res     types.Resource
	encoded []byte
}

// validate checks every resource with ValidateAll and encodes it. A resource
// that fails, has no name, or repeats an earlier name is dropped with an
// error: sending it would make Envoy reject the whole response.
func validate[T types.Resource](typeURL string, in []T) ([]validResource, []*config.Error) {
	var out []validResource
	var errs []*config.Error
	seen := make(map[string]bool, len(in))
	for i, r := range in {
		name := cache.GetResourceName(r)
		v, ok := any(r).(interface{ ValidateAll() error })
		switch {
		case name == "":
			errs = append(errs, generatedError(typeURL, fmt.Sprintf("#%d", i), "has no name"))
			continue
		case seen[name]:
			errs = append(errs, generatedError(typeURL, name, "is generated twice; the second is dropped"))
			continue
		case !ok:
			errs = append(errs, generatedError(typeURL, name, fmt.Sprintf("type %T cannot be validated", r)))
			continue
		}
		if err := v.ValidateAll(); err != nil {
			errs = append(errs, generatedError(typeURL, name, "fails Envoy validation and is not sent: "+err.Error()))
			continue
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			errs = append(errs, generatedError(typeURL, name, "cannot be encoded: "+err.Error()))
			continue
		}
		seen[name] = true
		out = append(out, validResource{name: name, res: r, encoded: b})
	}
	slices.SortFunc(out, func(a, b validResource) int { return cmp.Compare(a.name, b.name) })
	return out, errs
}

// generatedError reports a problem with a resource the translators produced
// rather than with an input object; it has no config key.
func generatedError(typeURL, name, msg string) *config.Error {
	return &config.Error{Source: "generated " + shortType(typeURL) + " " + name, Message: msg}
}

// version hashes the names and encodings of rs (sorted by name), so equal
// content always gets the same version and any change gets a new one.
func version(rs []validResource) string {
	h := sha256.New()
	var n [8]byte
	for _, r := range rs {
		binary.BigEndian.PutUint64(n[:], uint64(len(r.name)))
		h.Write(n[:])
		h.Write([]byte(r.name))
		binary.BigEndian.PutUint64(n[:], uint64(len(r.encoded)))
		h.Write(n[:])
		h.Write(r.encoded)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// toResources builds the cache's per-type group, versioned by content.
func toResources(rs []validResource) cache.Resources {
	items := make([]types.Resource, len(rs))
	for i, r := range rs {
		items[i] = r.res
	}
	return cache.NewResources(version(rs), items)
}

// references returns, for each of from, the names it refers to in the
// referenced type (an EDS cluster's load assignment, a listener's route
// configurations).
func references(from validResource, refType string) []string {
	refs := cache.GetResourceReferences(map[string]types.ResourceWithTTL{from.name: {Resource: from.res}})[refType]
	out := make([]string, 0, len(refs))
	for n := range refs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// prune makes a referring/referenced pair consistent, as ADS requires: a
// referrer naming a missing resource is dropped (Envoy would wait for it
// forever), and a referenced resource nobody names is dropped (the cache
// would never send it and Consistent would fail).
func prune(referrers []validResource, referrerType string, referenced []validResource, referencedType string) ([]validResource, []validResource, []*config.Error) {
	var errs []*config.Error
	have := make(map[string]bool, len(referenced))
	for _, r := range referenced {
		have[r.name] = true
	}
	used := map[string]bool{}
	keep := referrers[:0:0]
	for _, r := range referrers {
		refs := references(r, referencedType)
		var missing []string
		for _, n := range refs {
			if !have[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, generatedError(referrerType, r.name,
				fmt.Sprintf("refers to %s %v, which was not generated or was dropped; it is not sent", shortType(referencedType), missing)))
			continue
		}
		for _, n := range refs {
			used[n] = true
		}
		keep = append(keep, r)
	}
	keepRefd := referenced[:0:0]
	for _, r := range referenced {
		if !used[r.name] {
			errs = append(errs, generatedError(referencedType, r.name,
				"is not referred to by any "+shortType(referrerType)+" that is sent; it is not sent"))
			continue
		}
		keepRefd = append(keepRefd, r)
	}
	return keep, keepRefd, errs
}

// serviceResources validates and prunes a BuildServices result into the
// cluster and endpoint groups every snapshot of one push shares.
func serviceResources(r ServiceResources) (clusters, endpoints cache.Resources, errs []*config.Error) {
	cs, e1 := validate(resource.ClusterType, r.Clusters)
	es, e2 := validate(resource.EndpointType, r.Endpoints)
	cs, es, e3 := prune(cs, resource.ClusterType, es, resource.EndpointType)
	return toResources(cs), toResources(es), slices.Concat(r.Errors, e1, e2, e3)
}

// gatewayResources validates and prunes a BuildGateway result.
func gatewayResources(r GatewayResources) (listeners, routes cache.Resources, errs []*config.Error) {
	ls, e1 := validate(resource.ListenerType, r.Listeners)
	rs, e2 := validate(resource.RouteType, r.Routes)
	ls, rs, e3 := prune(ls, resource.ListenerType, rs, resource.RouteType)
	return toResources(ls), toResources(rs), slices.Concat(r.Errors, e1, e2, e3)
}

// newSnapshot assembles one snapshot. The cluster and endpoint groups are
// shared with every other snapshot of the push: snapshots are never
// mutated after they are built, so sharing is safe and saves a copy per
// gateway group.
func newSnapshot(clusters, endpoints, listeners, routes cache.Resources) (*cache.Snapshot, error) {
	snap := &cache.Snapshot{}
	snap.Resources[types.Cluster] = clusters
	snap.Resources[types.Endpoint] = endpoints
	snap.Resources[types.Listener] = listeners
	snap.Resources[types.Route] = routes
	if err := snap.Consistent(); err != nil {
		return nil, fmt.Errorf("snapshot is not consistent: %w", err)
	}
	return snap, nil
}
