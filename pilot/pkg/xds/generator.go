package xds

import (
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Generator translates a push context into Envoy resources. It is the seam
// between the server and the translators: the server decides how often to
// call it (services once per push, gateways once per distinct gateway
// configuration), the generator decides what the resources look like.
// Implementations must be pure: they may be called concurrently with reads
// of earlier results and must not keep or mutate what they return.
type Generator interface {
	// BuildServices returns the clusters and endpoints every proxy gets.
	BuildServices(push *model.PushContext) ServiceResources
	// BuildGateway returns the listeners and routes for a proxy selected by
	// exactly these Gateways (sorted by namespace and name; possibly none).
	BuildGateway(push *model.PushContext, gateways []config.Config) GatewayResources
}

// ServiceResources is the output of Generator.BuildServices.
type ServiceResources struct {
	Clusters  []*cluster.Cluster
	Endpoints []*endpoint.ClusterLoadAssignment
	// Errors are problems found while translating, located at the object
	// at fault; translation carried on without the offending part.
	Errors []*config.Error
}

// GatewayResources is the output of Generator.BuildGateway.
type GatewayResources struct {
	Listeners []*listener.Listener
	Routes    []*route.RouteConfiguration
	Errors    []*config.Error
}
