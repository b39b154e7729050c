package load

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

func assignment(cluster string, addrs ...string) *endpointv3.ClusterLoadAssignment {
	la := &endpointv3.LocalityLbEndpoints{}
	for _, a := range addrs {
		la.LbEndpoints = append(la.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{
			Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
				SocketAddress: &corev3.SocketAddress{Address: a, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}},
			}}},
		}})
	}
	return &endpointv3.ClusterLoadAssignment{ClusterName: cluster, Endpoints: []*endpointv3.LocalityLbEndpoints{la}}
}

// Marker endpoints are picked out of EDS responses once per content, with
// the ids the marker function gives them; other addresses are ignored.
func TestParseCollectsEndpointMarkers(t *testing.T) {
	calls := 0
	marker := func(addr string) (int, bool) {
		calls++
		id, ok := strings.CutPrefix(addr, "10.64.0.")
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(id)
		return n, err == nil
	}
	c := newParseCache(true)
	c.marker = marker
	r := sotw(t, resource.EndpointType, "1",
		assignment("a", "10.64.0.7", "10.0.0.1"), assignment("b", "10.0.0.2"), assignment("c", "10.64.0.9"))
	p := c.get(r.TypeURL, false, r.Sum, r.Resources)
	if p.err != nil {
		t.Fatal(p.err)
	}
	if !slices.Equal(p.markers, []int{7, 9}) {
		t.Fatalf("markers = %v, want [7 9]", p.markers)
	}
	again := sotw(t, resource.EndpointType, "2",
		assignment("a", "10.64.0.7", "10.0.0.1"), assignment("b", "10.0.0.2"), assignment("c", "10.64.0.9"))
	if c.get(again.TypeURL, false, again.Sum, again.Resources) != p || calls != 4 {
		t.Errorf("same content parsed again (%d marker calls, want 4)", calls)
	}
}

// The cache is bounded: beyond two generations of maxEntries contents the
// oldest are parsed again, and a recent content is still shared.
func TestParseCacheIsBounded(t *testing.T) {
	c := newParseCache(false)
	var first *parsed
	for i := range 2*maxEntries + 1 {
		r := sotw(t, resource.EndpointType, "n", assignment("a", "10.0.0."+strconv.Itoa(i%250), "10.1.0."+strconv.Itoa(i/250)))
		p := c.get(r.TypeURL, false, r.Sum, r.Resources)
		if i == 0 {
			first = p
		}
	}
	c.mu.Lock()
	n := len(c.entries) + len(c.old)
	c.mu.Unlock()
	if n > 2*maxEntries {
		t.Fatalf("cache holds %d contents, want at most %d", n, 2*maxEntries)
	}
	r := sotw(t, resource.EndpointType, "n", assignment("a", "10.0.0.0", "10.1.0.0"))
	if c.get(r.TypeURL, false, r.Sum, r.Resources) == first {
		t.Error("the oldest content is still cached after two full generations")
	}
	parses := c.parses.Load()
	last := sotw(t, resource.EndpointType, "n", assignment("a", "10.0.0."+strconv.Itoa((2*maxEntries)%250), "10.1.0."+strconv.Itoa(2*maxEntries/250)))
	c.get(last.TypeURL, false, last.Sum, last.Resources)
	if c.parses.Load() != parses {
		t.Error("a recent content was parsed again")
	}
}

// Marker paths are picked out of RDS responses, prefix and exact alike,
// each id once however many routes carry it; other paths are ignored.
func TestParseCollectsRouteMarkers(t *testing.T) {
	marker := func(path string) (int, bool) {
		id, ok := strings.CutPrefix(strings.TrimSuffix(path, "/"), "/mark-")
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(id)
		return n, err == nil
	}
	c := newParseCache(true)
	c.routeMarker = marker
	route := func(m *routev3.RouteMatch) *routev3.Route {
		return &routev3.Route{Match: m, Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 200}}}
	}
	rc := &routev3.RouteConfiguration{Name: "http.80", VirtualHosts: []*routev3.VirtualHost{
		{Name: "a:80", Domains: []string{"a"}, Routes: []*routev3.Route{
			route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/mark-4"}}),
			route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/mark-4/"}}),
			route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/other"}}),
		}},
		{Name: "b:80", Domains: []string{"b"}, Routes: []*routev3.Route{
			route(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/mark-2"}}),
		}},
	}}
	r := sotw(t, resource.RouteType, "1", rc)
	p := c.get(r.TypeURL, false, r.Sum, r.Resources)
	if p.err != nil {
		t.Fatal(p.err)
	}
	if !slices.Equal(p.routeMarkers, []int{4, 2}) {
		t.Fatalf("route markers = %v, want [4 2]", p.routeMarkers)
	}
}
