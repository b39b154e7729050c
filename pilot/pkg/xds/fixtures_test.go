package xds

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	netcore "github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/grpcgen"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// testStore is a ConfigStore whose whole content can be replaced, and a
// ConfigErrorReporter with settable errors.
type testStore struct {
	cur  atomic.Pointer[memory.Store]
	errs atomic.Pointer[[]*config.Error]
}

func newTestStore(cs ...config.Config) *testStore {
	s := &testStore{}
	s.set(cs...)
	return s
}

func (s *testStore) set(cs ...config.Config) { s.cur.Store(memory.New(cs)) }

func (s *testStore) setErrors(errs ...*config.Error) { s.errs.Store(&errs) }

func (s *testStore) Get(kind schema.Kind, namespace, name string) *config.Config {
	return s.cur.Load().Get(kind, namespace, name)
}

func (s *testStore) List(kind schema.Kind, namespace string) []config.Config {
	return s.cur.Load().List(kind, namespace)
}

func (s *testStore) ConfigErrors() []*config.Error {
	if p := s.errs.Load(); p != nil {
		return *p
	}
	return nil
}

var created = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func gateway(ns, name string, selector map[string]string, port uint32, hosts ...string) config.Config {
	return config.Config{
		Meta: config.Meta{Kind: schema.Gateway, Namespace: ns, Name: name, Source: "gw/" + name + ".yaml#0", CreationTimestamp: created},
		Spec: &networking.Gateway{Selector: selector, Servers: []*networking.Server{{
			Port:  &networking.Port{Number: port, Protocol: "HTTP", Name: "http"},
			Hosts: hosts,
		}}},
	}
}

func virtualService(ns, name string, gateways, hosts []string, dest string, port uint32) config.Config {
	return config.Config{
		Meta: config.Meta{Kind: schema.VirtualService, Namespace: ns, Name: name, Source: "vs/" + name + ".yaml#0", CreationTimestamp: created},
		Spec: &networking.VirtualService{Hosts: hosts, Gateways: gateways, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: dest, Port: &networking.PortSelector{Number: port}}}},
		}}},
	}
}

func serviceEntry(ns, name, host string, port uint32, addrs ...string) config.Config {
	se := &networking.ServiceEntry{Hosts: []string{host}, Resolution: networking.ServiceEntry_STATIC,
		Ports: []*networking.ServicePort{{Number: port, Protocol: "HTTP", Name: "http"}}}
	for _, a := range addrs {
		se.Endpoints = append(se.Endpoints, &networking.WorkloadEntry{Address: a})
	}
	return config.Config{
		Meta: config.Meta{Kind: schema.ServiceEntry, Namespace: ns, Name: name, Source: "se/" + name + ".yaml#0", CreationTimestamp: created},
		Spec: se,
	}
}

// fakeGenerator is a small, valid translator: an EDS cluster and load
// assignment per service port, a listener and route configuration per
// gateway port, one virtual host per bound VirtualService. It counts its
// calls so tests can check how often translation runs.
type fakeGenerator struct {
	services  atomic.Int64
	gateways  atomic.Int64
	endpoints atomic.Int64
	proxyless atomic.Int64
	// panicServices and panicGateway make the next calls panic, as a
	// translator bug would.
	panicServices atomic.Bool
	panicGateway  atomic.Bool

	mu sync.Mutex
	// translated lists the gateway sets translated, as group keys.
	translated []string
	// extra resources appended to every result (e.g. invalid ones).
	extraClusters  []*cluster.Cluster
	extraListeners []*listener.Listener
	extraRoutes    []*route.RouteConfiguration
	extraSecrets   []*tlsv3.Secret
	// upstreamSecrets are returned as every group's UpstreamSecrets.
	upstreamSecrets []*tlsv3.Secret
}

var adsSource = &core.ConfigSource{ResourceApiVersion: core.ApiVersion_V3,
	ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}}

func (g *fakeGenerator) BuildServices(push *model.PushContext) netcore.ServiceResources {
	g.services.Add(1)
	if g.panicServices.Load() {
		panic("services: test panic")
	}
	var out netcore.ServiceResources
	for _, svc := range push.Services() {
		for _, p := range svc.Ports {
			out.Clusters = append(out.Clusters, fakeCluster(model.ClusterName(p.Number, "", svc.Hostname)))
		}
	}
	out.Endpoints = fakeEndpoints(push)
	g.mu.Lock()
	out.Clusters = append(out.Clusters, g.extraClusters...)
	g.mu.Unlock()
	return out
}

func (g *fakeGenerator) BuildEndpoints(push *model.PushContext) netcore.EndpointResources {
	g.endpoints.Add(1)
	return netcore.EndpointResources{Endpoints: fakeEndpoints(push)}
}

// BuildProxyless serves, per service port, an API listener and route
// configuration named "HOST:PORT" routing to the port's cluster.
func (g *fakeGenerator) BuildProxyless(push *model.PushContext) grpcgen.Resources {
	g.proxyless.Add(1)
	var out grpcgen.Resources
	for _, svc := range push.Services() {
		for _, p := range svc.Ports {
			name := svc.Hostname + ":" + strconv.Itoa(int(p.Number))
			cname := model.ClusterName(p.Number, "", svc.Hostname)
			out.Listeners = append(out.Listeners, apiListener(name))
			out.Routes = append(out.Routes, &route.RouteConfiguration{Name: name, VirtualHosts: []*route.VirtualHost{{
				Name: name, Domains: []string{"*"}, Routes: []*route.Route{routeTo(cname)},
			}}})
			out.Clusters = append(out.Clusters, fakeCluster(cname))
		}
	}
	out.Endpoints = fakeEndpoints(push)
	return out
}

func fakeCluster(name string) *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig:     &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource},
		ConnectTimeout:       durationpb.New(time.Second),
	}
}

// fakeEndpoints is one load assignment per service port.
func fakeEndpoints(push *model.PushContext) []*endpoint.ClusterLoadAssignment {
	var out []*endpoint.ClusterLoadAssignment
	for _, svc := range push.Services() {
		for _, p := range svc.Ports {
			cla := &endpoint.ClusterLoadAssignment{ClusterName: model.ClusterName(p.Number, "", svc.Hostname)}
			var lbs []*endpoint.LbEndpoint
			for _, ep := range svc.Endpoints {
				lbs = append(lbs, &endpoint.LbEndpoint{HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
					Address: socket(ep.Address, ep.PortFor(p)),
				}}})
			}
			cla.Endpoints = []*endpoint.LocalityLbEndpoints{{LbEndpoints: lbs}}
			out = append(out, cla)
		}
	}
	return out
}

func routeTo(cluster string) *route.Route {
	return &route.Route{
		Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/"}},
		Action: &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_Cluster{
			Cluster: cluster,
		}}},
	}
}

// apiListener is a proxyless gRPC listener fetching its routes over RDS.
func apiListener(name string) *listener.Listener {
	m := &hcm.HttpConnectionManager{
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{ConfigSource: adsSource, RouteConfigName: name}},
	}
	a, _ := anypb.New(m)
	return &listener.Listener{Name: name, ApiListener: &listener.ApiListener{ApiListener: a}}
}

func (g *fakeGenerator) BuildGateway(push *model.PushContext, gateways []config.Config, _ model.SecretScope) netcore.GatewayResources {
	g.gateways.Add(1)
	if g.panicGateway.Load() {
		panic("gateway: test panic")
	}
	g.mu.Lock()
	g.translated = append(g.translated, model.GatewayGroupKey(gateways))
	g.mu.Unlock()
	var out netcore.GatewayResources
	vhosts := map[uint32][]*route.VirtualHost{}
	for _, gw := range gateways {
		for _, srv := range gw.Spec.(*networking.Gateway).GetServers() {
			port := srv.GetPort().GetNumber()
			if _, ok := vhosts[port]; !ok {
				vhosts[port] = nil
				out.Listeners = append(out.Listeners, httpListener(port))
			}
			for _, vs := range push.VirtualServicesForGateway(gw.Namespace + "/" + gw.Name) {
				spec := vs.Spec.(*networking.VirtualService)
				d := spec.GetHttp()[0].GetRoute()[0].GetDestination()
				vhosts[port] = append(vhosts[port], &route.VirtualHost{
					Name:    vs.Namespace + "/" + vs.Name,
					Domains: spec.GetHosts(),
					Routes:  []*route.Route{routeTo(model.ClusterName(d.GetPort().GetNumber(), "", d.GetHost()))},
				})
			}
		}
	}
	for _, port := range sortedKeys(vhosts) {
		out.Routes = append(out.Routes, &route.RouteConfiguration{Name: model.RouteName(port), VirtualHosts: vhosts[port]})
	}
	g.mu.Lock()
	out.Listeners = append(out.Listeners, g.extraListeners...)
	out.Routes = append(out.Routes, g.extraRoutes...)
	out.Secrets = append(out.Secrets, g.extraSecrets...)
	out.UpstreamSecrets = append(out.UpstreamSecrets, g.upstreamSecrets...)
	g.mu.Unlock()
	return out
}

func (g *fakeGenerator) translatedGroups() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.translated)
}

func sortedKeys(m map[uint32][]*route.VirtualHost) []uint32 {
	var out []uint32
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func socket(addr string, port uint32) *core.Address {
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address: addr, PortSpecifier: &core.SocketAddress_PortValue{PortValue: port},
	}}}
}

// httpListener is a gateway listener whose routes come over RDS.
func httpListener(port uint32) *listener.Listener {
	return listenerWithRDS(model.ListenerName(port), port, model.RouteName(port))
}

func listenerWithRDS(name string, port uint32, routeName string) *listener.Listener {
	routerAny, _ := anypb.New(&router.Router{})
	m := &hcm.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
			ConfigSource: adsSource, RouteConfigName: routeName,
		}},
		HttpFilters: []*hcm.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: routerAny}}},
	}
	hcmAny, _ := anypb.New(m)
	return &listener.Listener{
		Name:    name,
		Address: socket("0.0.0.0", port),
		FilterChains: []*listener.FilterChain{{Filters: []*listener.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listener.Filter_TypedConfig{TypedConfig: hcmAny},
		}}}},
	}
}

// tlsListener terminates TLS with a certificate fetched over ADS (SDS)
// and serves the routes of routeName.
func tlsListener(name string, port uint32, routeName, secret string) *listener.Listener {
	l := listenerWithRDS(name, port, routeName)
	tc, _ := anypb.New(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: secret, SdsConfig: adsSource}},
	}})
	l.FilterChains[0].TransportSocket = &core.TransportSocket{Name: "envoy.transport_sockets.tls",
		ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: tc}}
	return l
}

func tlsSecret(name string) *tlsv3.Secret {
	inline := func(s string) *core.DataSource {
		return &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: []byte(s)}}
	}
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: inline("cert of " + name), PrivateKey: inline("key of " + name),
	}}}
}

// invalidCluster fails ValidateAll: its load balancing policy is not a
// defined enum value.
func invalidCluster(name string) *cluster.Cluster {
	return &cluster.Cluster{Name: name, LbPolicy: cluster.Cluster_LbPolicy(99),
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_STATIC}}
}

// invalidRoute fails ValidateAll: a virtual host needs at least one domain.
func invalidRoute(name string) *route.RouteConfiguration {
	return &route.RouteConfiguration{Name: name, VirtualHosts: []*route.VirtualHost{{Name: "no-domains"}}}
}
