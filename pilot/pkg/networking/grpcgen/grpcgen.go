// Package grpcgen translates the mesh's services, VirtualServices and
// DestinationRules into the xDS resources a proxyless gRPC client (gRPC-Go's
// xds resolver and balancers) consumes: API listeners, route
// configurations, EDS clusters and endpoint assignments.
//
// gRPC understands only a subset of Envoy's API and NACKs a resource that
// uses fields it cannot honour (an lb_policy other than ROUND_ROBIN,
// RING_HASH or LEAST_REQUEST, a locality without weight or ID, duplicate
// endpoint addresses, zero retries...). This translator emits only that
// subset and reports the rest of the user's config as config.Errors:
// warnings where the config still works without the part gRPC ignores,
// errors where what is left out changes behaviour.
//
// Naming follows Istio: the listener a client asks for is the target of
// "xds:///HOST:PORT" (for example "reviews.default.svc.cluster.local:9080"),
// its route configuration has the same name, and clusters and endpoint
// assignments are "outbound|PORT|SUBSET|HOST". Only fully qualified
// "HOST:PORT" names are produced: the resources are shared by every client,
// so names relative to a client's namespace ("reviews:9080") cannot be
// resolved here, and a port-less name would be ambiguous for multi-port
// services.
package grpcgen

import (
	"fmt"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Resources is everything a gRPC client may ask for, each list sorted by
// resource name. The ADS server hands a client exactly the names it asks for.
type Resources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	// Errors are problems with the user's config found while translating;
	// the resources above never contain what they describe.
	Errors []*config.Error
}

// Build translates push for proxyless gRPC clients. It is pure and
// deterministic: the same push gives byte-identical resources.
func Build(push *model.PushContext) Resources {
	r := &reporter{}
	var out Resources
	out.Listeners, out.Routes = buildListenersAndRoutes(push, r)
	out.Clusters = buildClusters(push, r)
	// One assignment per EDS cluster built: a cluster left out (TLS gRPC
	// cannot do, an invalid policy) leaves no endpoints behind.
	eds := map[string]bool{}
	for _, c := range out.Clusters {
		if c.GetType() == clusterv3.Cluster_EDS {
			eds[c.GetEdsClusterConfig().GetServiceName()] = true
		}
	}
	for _, e := range buildEndpoints(push, r) {
		if eds[e.GetClusterName()] {
			out.Endpoints = append(out.Endpoints, e)
		}
	}
	out.Errors = r.errs
	return out
}

// ListenerName is the name of the API listener (and of its route
// configuration) a client dialing "xds:///HOST:PORT" asks for.
func ListenerName(host string, port uint32) string {
	return host + ":" + strconv.FormatUint(uint64(port), 10)
}

// reporter collects problems. One DestinationRule or VirtualService is
// read for many clusters and listeners, so a problem is kept once, in the
// order first found.
type reporter struct {
	errs []*config.Error
	seen map[string]bool
}

func (r *reporter) add(errs ...*config.Error) {
	for _, e := range errs {
		k := e.Error()
		if e.Warning {
			k = "W " + k
		}
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		if r.seen[k] {
			continue
		}
		r.seen[k] = true
		r.errs = append(r.errs, e)
	}
}

func (r *reporter) errorf(c *config.Config, field, format string, args ...any) {
	r.add(&config.Error{Source: c.Source, Key: c.Key(), Field: field, Message: fmt.Sprintf(format, args...)})
}

func (r *reporter) warnf(c *config.Config, field, format string, args ...any) {
	r.add(&config.Error{Source: c.Source, Key: c.Key(), Field: field, Message: fmt.Sprintf(format, args...), Warning: true})
}
