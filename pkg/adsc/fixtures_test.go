package adsc

import (
	"fmt"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	reviewsCluster = "outbound|8080||reviews.default.svc.cluster.local"
	ratingsCluster = "outbound|9080||ratings.default.svc.cluster.local"
	listener80     = "0.0.0.0_80"
	listener8080   = "0.0.0.0_8080"
	route80        = "http.80"
	route8080      = "http.8080"
)

func testNode() *corev3.Node {
	return IstioNode(NodeOptions{
		PodName:   "gw-1",
		Namespace: "istio-system",
		Labels:    map[string]string{"istio": "ingressgateway", "app": "istio-ingressgateway"},
		ClusterID: "Kubernetes",
	})
}

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
		ConnectTimeout:       durationpb.New(10 * time.Second),
	}
}

// staticCluster has its endpoints inline, so it needs no EDS.
func staticCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(time.Second),
		LoadAssignment:       assignment(name, "10.1.0.9"),
	}
}

func socket(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       ip,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func assignment(name string, ips ...string) *endpointv3.ClusterLoadAssignment {
	var lbs []*endpointv3.LbEndpoint
	for _, ip := range ips {
		lbs = append(lbs, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{
			Endpoint: &endpointv3.Endpoint{Address: socket(ip, 8080)},
		}})
	}
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints:   []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs}},
	}
}

func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatalf("anypb.New(%T): %v", m, err)
	}
	return a
}

func newHCM(t testing.TB, routeName string) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		StatPrefix: "outbound_" + routeName,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: routeName,
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})},
		}},
	}
}

func hcmFilter(t testing.TB, routeName string) *listenerv3.Filter {
	return &listenerv3.Filter{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, newHCM(t, routeName))},
	}
}

func httpListener(t testing.TB, name string, port uint32, routeName string) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:         name,
		Address:      socket("0.0.0.0", port),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{hcmFilter(t, routeName)}}},
	}
}

func routeConfig(name, cluster, prefix string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    "reviews.example.com:80",
			Domains: []string{"reviews.example.com"},
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
				}},
			}},
		}},
	}
}

// config is one gateway configuration, as a control plane would serve it.
type config struct {
	clusters  []*clusterv3.Cluster
	endpoints []*endpointv3.ClusterLoadAssignment
	listeners []*listenerv3.Listener
	routes    []*routev3.RouteConfiguration
}

// baseConfig is the gateway of the brief: one EDS cluster and its
// endpoints, one listener whose HCM uses RDS "http.80", and that route.
func baseConfig(t testing.TB) config {
	return config{
		clusters:  []*clusterv3.Cluster{edsCluster(reviewsCluster)},
		endpoints: []*endpointv3.ClusterLoadAssignment{assignment(reviewsCluster, "10.1.0.1")},
		listeners: []*listenerv3.Listener{httpListener(t, listener80, 80, route80)},
		routes:    []*routev3.RouteConfiguration{routeConfig(route80, reviewsCluster, "/")},
	}
}

// snapshot builds the config's snapshot at version, after checking that
// every resource passes its proto validation unless invalidOK.
func (c config) snapshot(t testing.TB, version string, invalidOK bool) *cachev3.Snapshot {
	t.Helper()
	res := map[resource.Type][]types.Resource{}
	add := func(typeURL string, m interface {
		types.Resource
		ValidateAll() error
	}) {
		if err := m.ValidateAll(); err != nil && !invalidOK {
			t.Fatalf("fixture %T is invalid: %v", m, err)
		}
		res[typeURL] = append(res[typeURL], m)
	}
	for _, m := range c.clusters {
		add(ClusterType, m)
	}
	for _, m := range c.endpoints {
		add(EndpointType, m)
	}
	for _, m := range c.listeners {
		add(ListenerType, m)
	}
	for _, m := range c.routes {
		add(RouteType, m)
	}
	snap, err := cachev3.NewSnapshot(version, res)
	if err != nil {
		t.Fatalf("snapshot %s: %v", version, err)
	}
	return snap
}

// clusterNames decodes a CDS response's names, for Reject functions.
func clusterNames(resources []*anypb.Any) ([]string, error) {
	var names []string
	for _, a := range resources {
		c := &clusterv3.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			return nil, fmt.Errorf("decode cluster: %w", err)
		}
		names = append(names, c.GetName())
	}
	return names, nil
}
