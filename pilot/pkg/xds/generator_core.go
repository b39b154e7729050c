package xds

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/grpcgen"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// CoreGenerator is the default Generator: the translators in
// pilot/pkg/networking/core and, for proxyless gRPC, grpcgen.
type CoreGenerator struct {
	// Secrets holds the Secrets credentialNames name: certificates and
	// CAs of Gateway servers and of DestinationRules' upstream TLS; nil
	// serves no Secrets, and servers needing them are reported and left
	// out.
	Secrets model.SecretStore
	// Caches keep translations of unchanged objects across pushes (the
	// server's default generator has them; the zero value has none).
	Caches core.Caches
}

var _ Generator = CoreGenerator{}

// BuildServices calls core.BuildServices.
func (CoreGenerator) BuildServices(push *model.PushContext) ServiceResources {
	r := core.BuildServices(push)
	return ServiceResources{Clusters: r.Clusters, Endpoints: r.Endpoints, Errors: r.Errors}
}

// BuildEndpoints calls endpoint.BuildEndpoints; the server keeps the
// assignments of the clusters it serves, as core.BuildServices does.
func (CoreGenerator) BuildEndpoints(push *model.PushContext) EndpointResources {
	eps, errs := endpoint.BuildEndpoints(push)
	return EndpointResources{Endpoints: eps, Errors: errs}
}

// BuildGateway calls core.BuildGatewayCached.
func (g CoreGenerator) BuildGateway(push *model.PushContext, gateways []config.Config, scope model.SecretScope) GatewayResources {
	r := core.BuildGatewayCached(push, gateways, g.Secrets, scope, g.Caches)
	return GatewayResources{Listeners: r.Listeners, Routes: r.Routes, Secrets: r.Secrets, UpstreamSecrets: r.UpstreamSecrets,
		SecretRefusals: r.SecretRefusals, Errors: r.Errors}
}

// BuildProxyless calls grpcgen.Build.
func (CoreGenerator) BuildProxyless(push *model.PushContext) ProxylessResources {
	r := grpcgen.Build(push)
	return ProxylessResources{Listeners: r.Listeners, Routes: r.Routes, Clusters: r.Clusters, Endpoints: r.Endpoints, Errors: r.Errors}
}
