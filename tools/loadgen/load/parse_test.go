package load

import (
	"slices"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func edsCluster(name, service string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			ServiceName: service,
			EdsConfig:   &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		},
	}
}

// sotw serializes a DiscoveryResponse and reads it as the client does.
func sotw(t *testing.T, typeURL, nonce string, ms ...proto.Message) xdswire.Response {
	t.Helper()
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, Nonce: nonce, VersionInfo: nonce}
	for _, m := range ms {
		resp.Resources = append(resp.Resources, mustAny(t, m))
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	r, err := xdswire.ReadResponse(b, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSharedParseOncePerContent(t *testing.T) {
	c := newParseCache(true)
	a, b := edsCluster("outbound|8080||a", "outbound|8080||a"), edsCluster("outbound|8080||b", "")
	first := sotw(t, resource.ClusterType, "1", a, b)
	// The same clusters in the other order with another nonce, as a
	// go-control-plane server sends them to another stream.
	reordered := sotw(t, resource.ClusterType, "2", b, a)

	var wg sync.WaitGroup
	got := make([]*parsed, 50)
	for i := range got {
		r := first
		if i%2 == 1 {
			r = reordered
		}
		wg.Go(func() { got[i] = c.get(r.TypeURL, false, r.Sum, r.Resources) })
	}
	wg.Wait()
	for _, p := range got {
		if p != got[0] {
			t.Fatal("gateways with the same content got different parses")
		}
	}
	if n := c.parses.Load(); n != 1 {
		t.Fatalf("%d parses, want 1", n)
	}
	p := got[0]
	if p.err != nil {
		t.Fatal(p.err)
	}
	if want := []string{"outbound|8080||a", "outbound|8080||b"}; !slices.Equal(p.refs, want) {
		t.Fatalf("EDS references %v, want %v", p.refs, want)
	}

	other := sotw(t, resource.ClusterType, "3", a)
	c.get(other.TypeURL, false, other.Sum, other.Resources)
	if n := c.parses.Load(); n != 2 {
		t.Fatalf("different content: %d parses, want 2", n)
	}
}

func TestParseExtractsReferencesAndPrefixes(t *testing.T) {
	static := &clusterv3.Cluster{Name: "static", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	cds := sotw(t, resource.ClusterType, "1", edsCluster("x", "svc-x"), static, edsCluster("y", "svc-x"))
	p := parse(cds.TypeURL, false, cds.Resources, true)
	if p.err != nil || !slices.Equal(p.refs, []string{"svc-x"}) || !slices.Equal(p.names, []string{"x", "static", "y"}) {
		t.Fatalf("CDS: refs %v names %v err %v", p.refs, p.names, p.err)
	}

	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "outbound_0.0.0.0_80",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: "http.80",
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
	}
	l := &listenerv3.Listener{
		Name: "0.0.0.0_80",
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)},
		}}}},
	}
	lds := sotw(t, resource.ListenerType, "1", l)
	if p := parse(lds.TypeURL, false, lds.Resources, true); p.err != nil || !slices.Equal(p.refs, []string{"http.80"}) {
		t.Fatalf("LDS: refs %v err %v", p.refs, p.err)
	}

	route := func(prefix string) *routev3.Route {
		return &routev3.Route{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "x"}}},
		}
	}
	rc := &routev3.RouteConfiguration{Name: "http.80", VirtualHosts: []*routev3.VirtualHost{
		{Name: "a", Domains: []string{"a"}, Routes: []*routev3.Route{route("/api/v3"), route("/")}},
	}}
	rds := sotw(t, resource.RouteType, "1", rc)
	p = parse(rds.TypeURL, false, rds.Resources, true)
	if p.err != nil || !p.prefixes["/api/v3"] || !p.prefixes["/"] || p.prefixes["/api/v2"] {
		t.Fatalf("RDS: prefixes %v err %v", p.prefixes, p.err)
	}
}

func TestParseRejectsWhatEnvoyWould(t *testing.T) {
	// A load assignment without a cluster name fails validation.
	bad := sotw(t, resource.EndpointType, "1", &endpointv3.ClusterLoadAssignment{})
	if p := parse(bad.TypeURL, false, bad.Resources, true); p.err == nil {
		t.Error("invalid load assignment accepted with validation on")
	}
	if p := parse(bad.TypeURL, false, bad.Resources, false); p.err != nil {
		t.Errorf("validation off still rejects: %v", p.err)
	}
	// A cluster in a listener response.
	wrong := sotw(t, resource.ClusterType, "1", edsCluster("x", ""))
	if p := parse(resource.ListenerType, false, wrong.Resources, false); p.err == nil {
		t.Error("cluster accepted in an LDS response")
	}
}

func TestParseDelta(t *testing.T) {
	resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: resource.ClusterType, Nonce: "n", Resources: []*discoveryv3.Resource{
		{Name: "x", Version: "v1", Resource: mustAny(t, edsCluster("x", "svc-x"))},
		{Name: "y", Version: "v2", Resource: mustAny(t, edsCluster("y", ""))},
	}, RemovedResources: []string{"z"}}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	r, err := xdswire.ReadResponse(b, true)
	if err != nil {
		t.Fatal(err)
	}
	p := newParseCache(true).get(r.TypeURL, true, r.Sum, r.Resources)
	if p.err != nil {
		t.Fatal(p.err)
	}
	if !slices.Equal(p.names, []string{"x", "y"}) || !slices.Equal(p.versions, []string{"v1", "v2"}) ||
		!slices.Equal(p.refsOf[0], []string{"svc-x"}) || !slices.Equal(p.refsOf[1], []string{"y"}) {
		t.Fatalf("delta parse: names %v versions %v refs %v", p.names, p.versions, p.refsOf)
	}
	if !slices.Equal(r.Removed, []string{"z"}) {
		t.Fatalf("removed %v", r.Removed)
	}
}

// A gateway whose content is being parsed by another gets the entry at
// once, without waiting inside the decode (where it would hold its copy
// of the response), and waits for the same parse afterwards.
func TestStartDoesNotWaitForAnotherGatewaysParse(t *testing.T) {
	c := newParseCache(true)
	block, parsing := make(chan struct{}), make(chan struct{})
	c.marker = func(string) (int, bool) {
		close(parsing)
		<-block
		return 0, false
	}
	r := sotw(t, resource.EndpointType, "1", assignment("svc-a", "10.0.0.1"))
	first := make(chan *parsed)
	go func() { first <- c.get(r.TypeURL, false, r.Sum, r.Resources) }()
	<-parsing
	e := c.start(r.TypeURL, false, r.Sum, r.Resources)
	select {
	case <-e.done:
		t.Fatal("the entry was done while its parse was still running")
	default:
	}
	close(block)
	p := <-first
	if got := e.wait(); got != p || c.parses.Load() != 1 {
		t.Errorf("second gateway got %p, first %p; %d parses", got, p, c.parses.Load())
	}
}
