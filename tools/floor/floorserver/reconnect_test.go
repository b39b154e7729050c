package floorserver

import (
	"context"
	"net"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

func frame(t *testing.T, typeURL, version string, ms ...proto.Message) *xdswire.Frame {
	t.Helper()
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: version + typeURL}
	for _, m := range ms {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return &xdswire.Frame{Bytes: b}
}

// routesDump is a gateway's config without clusters: one listener on port
// 80 whose routes (http.80) match prefix.
func routesDump(t *testing.T, version, prefix string) Dump {
	t.Helper()
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{StatPrefix: "http", RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{
		Rds: &hcmv3.Rds{RouteConfigName: "http.80", ConfigSource: ads}}})
	if err != nil {
		t.Fatal(err)
	}
	l := &listenerv3.Listener{
		Name: "0.0.0.0_80",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}}}},
	}
	rc := &routev3.RouteConfiguration{Name: "http.80", VirtualHosts: []*routev3.VirtualHost{{
		Name: "app", Domains: []string{"*"}, Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "x"}}},
		}},
	}}}
	return Dump{
		resource.ClusterType:  frame(t, resource.ClusterType, version),
		resource.EndpointType: frame(t, resource.EndpointType, version),
		resource.ListenerType: frame(t, resource.ListenerType, version, l),
		resource.RouteType:    frame(t, resource.RouteType, version, rc),
	}
}

func serve(t *testing.T, l net.Listener, d Dump) *grpc.Server {
	t.Helper()
	s, err := New(d, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.ForceServerCodecV2(xdswire.Codec{}))
	s.Register(g)
	go func() { _ = g.Serve(l) }()
	return g
}

// TestGatewaysReconnectAfterTheServerRestarts stops the server after cold
// convergence and starts another with new routes on the same address: the
// gateways' streams fail, they reconnect after a backoff, re-subscribe and
// converge on the new routes.
func TestGatewaysReconnectAfterTheServerRestarts(t *testing.T) {
	const gateways = 4
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	first := serve(t, l, routesDump(t, "1", "/api/v2"))
	var second *grpc.Server
	defer func() {
		first.Stop()
		if second != nil {
			second.Stop()
		}
	}()
	rep, err := load.Run(context.Background(), load.Options{
		Address: addr, Gateways: gateways, Timeout: time.Minute, Validate: true,
		BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		UpdatePrefix: "/api/v3",
		Trigger: func(context.Context) error {
			first.Stop()
			l2, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			second = serve(t, l2, routesDump(t, "2", "/api/v3"))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TimedOut || rep.NACKs != 0 || rep.Cold.Converged != gateways || rep.Update == nil || rep.Update.Converged != gateways {
		t.Fatalf("report %+v", rep)
	}
	if rep.Reconnects < gateways || rep.Errors < gateways {
		t.Fatalf("want every gateway to see its stream fail and reconnect: %d reconnects, %d errors", rep.Reconnects, rep.Errors)
	}
}
