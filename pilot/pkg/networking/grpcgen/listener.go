package grpcgen

import (
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// buildListenersAndRoutes makes, for every port of every service, the API
// listener a client dialing HOST:PORT asks for and its route configuration.
// Wildcard hosts are skipped: a client cannot dial "*.example.com".
func buildListenersAndRoutes(push *model.PushContext, r *reporter) ([]*listenerv3.Listener, []*routev3.RouteConfiguration) {
	idx := indexMeshVirtualServices(push, r)
	var listeners []*listenerv3.Listener
	var routes []*routev3.RouteConfiguration
	for _, svc := range push.Services() {
		if strings.HasPrefix(svc.Hostname, "*") {
			continue
		}
		for _, port := range svc.Ports {
			name := ListenerName(svc.Hostname, port.Number)
			rc := buildRouteConfig(push, idx, svc, port, r)
			if rc == nil {
				continue
			}
			l, err := apiListener(name)
			if err != nil {
				r.add(&config.Error{Key: svc.Source, Message: "listener " + name + " cannot be built: " + err.Error()})
				continue
			}
			listeners = append(listeners, l)
			routes = append(routes, rc)
		}
	}
	slices.SortFunc(listeners, func(a, b *listenerv3.Listener) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(routes, func(a, b *routev3.RouteConfiguration) int { return strings.Compare(a.Name, b.Name) })
	return listeners, routes
}

// apiListener is a client-side listener: no address, just an HTTP
// connection manager that fetches route configuration name over ADS.
//
// RDS rather than an inline route_config: a route change then re-sends
// only the route configuration, gRPC applies it to running channels without
// touching the listener, and a route configuration gRPC rejects leaves the
// listener (and the last good routes) in place.
//
// The fault filter is always present, before the router (gRPC requires the
// terminal router last): routes switch faults on per route, and a listener
// that had to change whenever the first fault appeared would race the
// route update that uses it. With no per-route fault it does nothing.
func apiListener(name string) (*listenerv3.Listener, error) {
	fault, err := protoconv.Any(&faultv3.HTTPFault{})
	if err != nil {
		return nil, err
	}
	router, err := protoconv.Any(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource: &corev3.ConfigSource{
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
				ResourceApiVersion:    corev3.ApiVersion_V3,
			},
			RouteConfigName: name,
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: wellknown.Fault, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: fault}},
			{Name: wellknown.Router, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}},
		},
	}
	if err := hcm.ValidateAll(); err != nil {
		return nil, err
	}
	a, err := protoconv.Any(hcm)
	if err != nil {
		return nil, err
	}
	l := &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: a}}
	return l, l.ValidateAll()
}
