package push

import (
	"slices"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	netcore "github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

var adsSource = &core.ConfigSource{ResourceApiVersion: core.ApiVersion_V3,
	ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}}

// edsCluster is a cluster whose endpoints come over ADS (EDS).
func edsCluster(name string, timeout time.Duration) *cluster.Cluster {
	return &cluster.Cluster{Name: name, ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource}, ConnectTimeout: durationpb.New(timeout)}
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
		Name: name,
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &core.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains: []*listener.FilterChain{{Filters: []*listener.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listener.Filter_TypedConfig{TypedConfig: hcmAny},
		}}}},
	}
}

func TestPruneKeepsSnapshotsConsistent(t *testing.T) {
	in := snapshot.NewInterner(nil)
	cs := []*cluster.Cluster{edsCluster("with-cla", time.Second), edsCluster("no-cla", time.Second)}
	es := []*endpoint.ClusterLoadAssignment{{ClusterName: "with-cla"}, {ClusterName: "unused"}}
	clusters, endpoints, errs := serviceResources(in, "", netcore.ServiceResources{Clusters: cs, Endpoints: es,
		Errors: []*config.Error{{Message: "from the translator"}}})
	if got := clusters.Names(); !slices.Equal(got, []string{"with-cla"}) {
		t.Errorf("clusters %v", got)
	}
	if got := endpoints.Names(); !slices.Equal(got, []string{"with-cla"}) {
		t.Errorf("endpoints %v", got)
	}
	if len(errs) != 3 || errs[0].Message != "from the translator" {
		t.Errorf("errors %v: want the translator's, then the dropped cluster and load assignment", errs)
	}

	ls := []*listener.Listener{httpListener(80), listenerWithRDS("0.0.0.0_81", 81, "missing")}
	rs := []*route.RouteConfiguration{{Name: model.RouteName(80)}, {Name: "unused"}}
	listeners, routes, secrets, errs := gatewayResources(in, "g", netcore.GatewayResources{Listeners: ls, Routes: rs})
	if got := listeners.Names(); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners %v", got)
	}
	if got := routes.Names(); !slices.Equal(got, []string{"http.80"}) {
		t.Errorf("routes %v", got)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want the dangling listener and the unused route", errs)
	}
	v := snapshot.NewView(clusters, endpoints, listeners, routes, secrets)
	if err := v.Consistent(); err != nil {
		t.Fatal(err)
	}
	for _, typ := range snapshot.Types {
		if v.Set(typ).Version == "" {
			t.Errorf("%s has no version", snapshot.ShortType(typ))
		}
	}
}
