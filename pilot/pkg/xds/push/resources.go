package push

import (
	"slices"
	"strings"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	netcore "github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// The generator's results become immutable, once-marshaled sets of
// package snapshot; these join the translation's own errors (first) to
// the problems found interning and pruning its resources.

// serviceResources validates, interns and prunes a BuildServices result
// into the cluster and endpoint sets every view of one push shares.
func serviceResources(in *snapshot.Interner, scope string, r netcore.ServiceResources) (clusters, endpoints *snapshot.TypeSet, errs []*config.Error) {
	clusters, endpoints, errs = snapshot.ServiceSets(in, scope, r.Clusters, r.Endpoints)
	return clusters, endpoints, slices.Concat(r.Errors, errs)
}

// endpointResources interns the load assignments of an endpoints-only push
// against the clusters of the last full push (snapshot.EndpointSet); ok is
// false when a cluster's assignment is missing, which only a full push
// can resolve.
func endpointResources(in *snapshot.Interner, scope string, clusters *snapshot.TypeSet, eps netcore.EndpointResources) (endpoints *snapshot.TypeSet, errs []*config.Error, ok bool) {
	endpoints, errs, ok = snapshot.EndpointSet(in, scope, clusters, eps.Endpoints)
	return endpoints, slices.Concat(eps.Errors, errs), ok
}

// gatewayResources validates, interns and prunes a BuildGateway result.
func gatewayResources(in *snapshot.Interner, scope string, r netcore.GatewayResources) (listeners, routes, secrets *snapshot.TypeSet, errs []*config.Error) {
	listeners, routes, secrets, errs = snapshot.GatewaySets(in, scope, r.Listeners, r.Routes, r.Secrets)
	return listeners, routes, secrets, slices.Concat(r.Errors, errs)
}

// withUpstreamSecrets interns a gateway group's upstream secrets (the
// certificates its clusters fetch) and joins them to the secrets its
// listeners fetch. Only secrets some cluster of the push names are kept:
// a secret nobody names is never requested. A listener secret of the same
// name wins.
func withUpstreamSecrets(in *snapshot.Interner, scope string, clusters, listenerSecrets *snapshot.TypeSet, upstream []*tlsv3.Secret) (*snapshot.TypeSet, []*config.Error) {
	if len(upstream) == 0 {
		return listenerSecrets, nil
	}
	named := map[string]bool{}
	if clusters != nil {
		for _, c := range clusters.Items {
			for _, n := range c.Refs[snapshot.SDS] {
				named[n] = true
			}
		}
	}
	keep := slices.DeleteFunc(slices.Clone(upstream), func(s *tlsv3.Secret) bool {
		return !named[s.GetName()] || (listenerSecrets != nil && listenerSecrets.ByName[s.GetName()] != nil)
	})
	rs, errs := snapshot.Prepare(in, snapshot.SDS, scope+"/upstream", keep)
	var items []*snapshot.Resource
	if listenerSecrets != nil {
		items = slices.Clone(listenerSecrets.Items)
	}
	items = append(items, rs...)
	slices.SortFunc(items, func(a, b *snapshot.Resource) int { return strings.Compare(a.Name, b.Name) })
	return snapshot.NewTypeSet(items), errs
}
