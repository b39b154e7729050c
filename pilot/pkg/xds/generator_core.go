package xds

import (
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// CoreGenerator is the default Generator: the translators in
// pilot/pkg/networking/core.
type CoreGenerator struct{}

var _ Generator = CoreGenerator{}

// BuildServices calls core.BuildServices.
func (CoreGenerator) BuildServices(push *model.PushContext) ServiceResources {
	r := core.BuildServices(push)
	return ServiceResources{Clusters: r.Clusters, Endpoints: r.Endpoints, Errors: r.Errors}
}

// BuildGateway calls core.BuildGateway.
func (CoreGenerator) BuildGateway(push *model.PushContext, gateways []config.Config) GatewayResources {
	r := core.BuildGateway(push, gateways)
	return GatewayResources{Listeners: r.Listeners, Routes: r.Routes, Errors: r.Errors}
}
