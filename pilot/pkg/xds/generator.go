package xds

import (
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Generator translates a push context into Envoy resources. It is the seam
// between the server and the translators: the server decides how often to
// call it (services once per full push, endpoints once per endpoints-only
// push, gateways once per distinct gateway configuration, proxyless once
// per push with a proxyless client), the generator decides what the
// resources look like. Implementations must be pure: they may be called
// concurrently with reads of earlier results and must not keep or mutate
// what they return.
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
	BuildProxyless(push *model.PushContext) ProxylessResources
}

// ServiceResources is the output of Generator.BuildServices.
type ServiceResources struct {
	Clusters  []*cluster.Cluster
	Endpoints []*endpoint.ClusterLoadAssignment
	// Errors are problems found while translating, located at the object
	// at fault; translation carried on without the offending part.
	Errors []*config.Error
}

// EndpointResources is the output of Generator.BuildEndpoints.
type EndpointResources struct {
	Endpoints []*endpoint.ClusterLoadAssignment
	Errors    []*config.Error
}

// GatewayResources is the output of Generator.BuildGateway. Secrets are
// served over ADS as SDS resources; every one must be named by a
// listener's TLS context (with an ADS config source) or it is dropped.
type GatewayResources struct {
	Listeners []*listener.Listener
	Routes    []*route.RouteConfiguration
	Secrets   []*tlsv3.Secret
	// UpstreamSecrets are the certificates the clusters fetch over SDS
	// (DestinationRule credentialNames) for this group's proxies; those
	// no cluster names are dropped. They follow scope.Refusal too.
	UpstreamSecrets []*tlsv3.Secret
	// SecretRefusals are the secrets the scope's proxies are not sent,
	// for /debug/configz and /debug/syncz.
	SecretRefusals []model.SecretRefusal
	Errors         []*config.Error
}

// ProxylessResources is the output of Generator.BuildProxyless.
type ProxylessResources struct {
	Listeners []*listener.Listener
	Routes    []*route.RouteConfiguration
	Clusters  []*cluster.Cluster
	Endpoints []*endpoint.ClusterLoadAssignment
	Errors    []*config.Error
}

// IsProxyless reports whether a node is a proxyless gRPC client: node id
// type "proxyless" or GENERATOR metadata "grpc". Such nodes are served the
// proxyless resources, by exact name, instead of a gateway's.
func IsProxyless(p *model.Proxy) bool {
	return p.Type == model.Proxyless || p.Generator == "grpc"
}
