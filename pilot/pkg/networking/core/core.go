// Package core is the translation entry point the xDS server calls. It
// splits the work the way resources are shared: clusters and endpoints
// depend only on services and DestinationRules, so BuildServices runs once
// per push for every proxy; listeners and routes depend on the Gateways
// selecting a proxy, so BuildGateway runs once per distinct gateway
// configuration (model.GatewayGroupKey) and is shared by every proxy in it.
// Generator is that seam as an interface, with the result types every
// implementation returns; DefaultGenerator is these translators behind it,
// which the server and analysis both run.
//
// Everything here is a pure function of the push context: no I/O, no
// clocks, deterministic output.
package core

import (
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/listener"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// GatewayResources are the listeners, routes and SDS secrets of one
// gateway configuration, sorted by name, and the problems found building
// them.
type GatewayResources struct {
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	// Secrets are the certificates (and the CAs of MUTUAL servers) the
	// HTTPS and TLS listeners fetch over SDS (named as credentialName
	// says: "kubernetes://NAME" or "kubernetes://NAMESPACE/NAME", and
	// "...-cacert"): exactly those referenced.
	Secrets []*tlsv3.Secret
	// UpstreamSecrets are the client certificates and CAs the clusters
	// fetch for DestinationRule credentialNames ("kubernetes://NAME"),
	// resolved for the scope's proxies (see BuildUpstreamSecrets).
	UpstreamSecrets []*tlsv3.Secret
	// SecretRefusals are the secrets the scope's proxies may not have:
	// the filter chains needing them are left out, the clusters needing
	// them wait for them.
	SecretRefusals []model.SecretRefusal
	Errors         []*config.Error
}

// BuildGateway translates the Gateways selecting a proxy (as returned by
// push.GatewaysForProxy) into listeners and routes. Errors are those of
// merging the servers, then of the listeners, then of the routes.
//
// Every route configuration returned is named by a listener, and every
// listener's route configuration is returned, so a snapshot built from
// them is consistent: a route configuration whose listener could not be
// built is dropped, and a listener whose routes are missing gets an empty
// route configuration (Envoy answers 404) rather than waiting forever.
//
// BuildGateway knows no Secrets: HTTPS servers whose certificate comes
// from a Secret (credentialName) are reported and left out. Use
// BuildGatewayWithSecrets to serve them.
func BuildGateway(push *model.PushContext, gateways []config.Config) GatewayResources {
	return BuildGatewayWithSecrets(push, gateways, nil, model.SecretScope{})
}

// BuildGatewayWithSecrets is BuildGateway with the certificates of HTTPS
// servers read from secrets, for the proxies of scope: credentialNames
// resolve in its namespace, and only Secrets scope.Refusal allows are
// sent. Errors are those of merging the servers, then of the secrets, the
// listeners and the routes. A server whose Secret is refused, missing or
// unusable is left out entirely (chain and routes), so the listener never
// references a secret Envoy will not get.
func BuildGatewayWithSecrets(push *model.PushContext, gateways []config.Config, secrets model.SecretStore, scope model.SecretScope) GatewayResources {
	return BuildGatewayCached(push, gateways, secrets, scope, Caches{})
}

// Caches are translation results a caller keeps across pushes so that
// unchanged inputs are not translated again; the zero value caches
// nothing. Output is the same with or without them.
type Caches struct {
	// Routes keeps each VirtualService's routes per gateway port.
	Routes *route.Cache
}

// NewCaches returns empty caches.
func NewCaches() Caches { return Caches{Routes: route.NewCache()} }

// BuildGatewayCached is BuildGatewayWithSecrets reusing what caches hold.
func BuildGatewayCached(push *model.PushContext, gateways []config.Config, secrets model.SecretStore, scope model.SecretScope, caches Caches) GatewayResources {
	mg := model.MergeGateways(gateways)
	var out GatewayResources
	out.Errors = append(out.Errors, mg.Errors...)

	var errs []*config.Error
	out.Secrets, mg, out.SecretRefusals, errs = listener.BuildSecrets(mg, secrets, scope)
	out.Errors = append(out.Errors, errs...)

	var refused []model.SecretRefusal
	out.UpstreamSecrets, refused, errs = upstreamSecretsFor(push, gateways, secrets, scope)
	out.SecretRefusals = append(out.SecretRefusals, refused...)
	out.Errors = append(out.Errors, errs...)

	listeners, errs := listener.BuildGatewayListeners(push, mg)
	out.Listeners = listeners
	out.Secrets = keepReferenced(out.Secrets, listeners)
	out.Errors = append(out.Errors, errs...)

	routes, errs := route.BuildGatewayRoutesCached(push, mg, caches.Routes)
	out.Errors = append(out.Errors, errs...)
	// Route-level policies go on copies of the routes they target.
	routes = route.ApplySecurity(routes, push.GatewaySecurity())

	byName := make(map[string]*routev3.RouteConfiguration, len(routes))
	for _, r := range routes {
		byName[r.GetName()] = r
	}
	for _, l := range listeners {
		for _, name := range rdsNames(l) {
			r := byName[name]
			if r == nil {
				r = &routev3.RouteConfiguration{Name: name}
			}
			out.Routes = append(out.Routes, r)
		}
	}
	slices.SortFunc(out.Routes, func(a, b *routev3.RouteConfiguration) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// rdsNames are the route configurations a gateway listener fetches: one
// per HTTP listener, one per filter chain of an HTTPS listener.
func rdsNames(l *listenerv3.Listener) []string {
	var out []string
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			hcm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(hcm) == nil {
				if n := hcm.GetRds().GetRouteConfigName(); n != "" && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// ServiceResources are the clusters and endpoints shared by every gateway
// configuration, sorted by name, and the problems found building them.
type ServiceResources struct {
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	Errors    []*config.Error
}

// BuildServices translates every service and DestinationRule of the push.
// push.Errors (cross-object indexing problems) are not repeated here.
func BuildServices(push *model.PushContext) ServiceResources {
	var out ServiceResources
	clusters, errs := cluster.BuildClusters(push)
	out.Clusters = clusters
	out.Errors = append(out.Errors, errs...)
	eps, errs := endpoint.BuildEndpoints(push)
	out.Errors = append(out.Errors, errs...)

	// Keep exactly one assignment per EDS cluster: a cluster left out
	// because Envoy would reject it must not leave its endpoints behind.
	eds := map[string]bool{}
	for _, c := range clusters {
		if c.GetType() == clusterv3.Cluster_EDS {
			eds[c.GetEdsClusterConfig().GetServiceName()] = true
		}
	}
	for _, e := range eps {
		if eds[e.GetClusterName()] {
			out.Endpoints = append(out.Endpoints, e)
		}
	}
	return out
}
