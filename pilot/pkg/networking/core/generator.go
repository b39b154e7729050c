package core

import (
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/grpcgen"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Generator translates a push context into Envoy resources. It is the seam
// between the server and the translators: the server decides how often to
// call it (services once per full push, endpoints once per endpoints-only
// push, gateways once per distinct gateway configuration, proxyless once
// per push with a proxyless client), the generator decides what the
// resources look like. Implementations must be pure: they may be called
// concurrently with reads of earlier results and must not keep or mutate
// what they return. Analysis (pilot/pkg/config/analysis) runs the same
// generator without a server, so its findings are the server's.
type Generator interface {
	// BuildServices returns the clusters and endpoints every proxy gets.
	BuildServices(push *model.PushContext) ServiceResources
	// BuildEndpoints returns the load assignments alone, for a push that
	// changes only endpoints. Assignments of clusters BuildServices would
	// not return are dropped by the server.
	BuildEndpoints(push *model.PushContext) EndpointResources
	// BuildGateway returns the listeners, routes and secrets for the
	// proxies of scope selected by exactly these Gateways (sorted by
	// namespace and name; possibly none). Secrets must follow
	// scope.Refusal: none at all for a nil scope.Identity.
	BuildGateway(push *model.PushContext, gateways []config.Config, scope model.SecretScope) GatewayResources
	// BuildProxyless returns what every proxyless gRPC client is served:
	// API listeners named "HOST:PORT", their route configurations,
	// clusters and load assignments.
	BuildProxyless(push *model.PushContext) grpcgen.Resources
}

// PartialEndpointsGenerator is a Generator that can build the load
// assignments of some services alone. With it, an endpoints-only push
// that names the services that changed (PushRequest.ConfigsUpdated, as
// the Kubernetes registry sends) rebuilds and re-encodes their
// assignments only; every other assignment keeps its interned bytes.
type PartialEndpointsGenerator interface {
	// BuildEndpointsFor returns the assignments of the EDS clusters of
	// the services whose Source is in sources, as BuildEndpoints would.
	BuildEndpointsFor(push *model.PushContext, sources map[config.Key]struct{}) EndpointResources
}

// EndpointResources is the output of Generator.BuildEndpoints.
type EndpointResources struct {
	Endpoints []*endpointv3.ClusterLoadAssignment
	Errors    []*config.Error
}

// DefaultGenerator is the Generator the server uses unless told
// otherwise: the translators of this package and, for proxyless gRPC,
// grpcgen.
type DefaultGenerator struct {
	// Secrets holds the Secrets credentialNames name: certificates and
	// CAs of Gateway servers and of DestinationRules' upstream TLS; nil
	// serves no Secrets, and servers needing them are reported and left
	// out.
	Secrets model.SecretStore
	// Caches keep translations of unchanged objects across pushes (the
	// server's default generator has them; the zero value has none).
	Caches Caches
}

var (
	_ Generator                 = DefaultGenerator{}
	_ PartialEndpointsGenerator = DefaultGenerator{}
)

// BuildServices calls BuildServices.
func (DefaultGenerator) BuildServices(push *model.PushContext) ServiceResources {
	return BuildServices(push)
}

// BuildEndpoints calls endpoint.BuildEndpoints; the server keeps the
// assignments of the clusters it serves, as BuildServices does.
func (DefaultGenerator) BuildEndpoints(push *model.PushContext) EndpointResources {
	eps, errs := endpoint.BuildEndpoints(push)
	return EndpointResources{Endpoints: eps, Errors: errs}
}

// BuildEndpointsFor calls endpoint.BuildEndpointsFor.
func (DefaultGenerator) BuildEndpointsFor(push *model.PushContext, sources map[config.Key]struct{}) EndpointResources {
	eps, errs := endpoint.BuildEndpointsFor(push, sources)
	return EndpointResources{Endpoints: eps, Errors: errs}
}

// BuildGateway calls BuildGatewayCached.
func (g DefaultGenerator) BuildGateway(push *model.PushContext, gateways []config.Config, scope model.SecretScope) GatewayResources {
	return BuildGatewayCached(push, gateways, g.Secrets, scope, g.Caches)
}

// BuildProxyless calls grpcgen.Build.
func (DefaultGenerator) BuildProxyless(push *model.PushContext) grpcgen.Resources {
	return grpcgen.Build(push)
}

// Release lets go of the route cache's previous generation: what only
// pushes before push used (the server calls it once push has been
// translated for every connected proxy).
func (g DefaultGenerator) Release(push *model.PushContext) { g.Caches.Routes.Release(push) }
