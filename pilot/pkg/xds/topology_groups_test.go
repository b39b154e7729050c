package xds

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// topologyNode is an ingress gateway pod of istio-system sending
// proxyConfig as its PROXY_CONFIG metadata (nil: none), as istio-agent
// does.
func topologyNode(t *testing.T, pod string, proxyConfig any) *corev3.Node {
	t.Helper()
	md := map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}}
	if proxyConfig != nil {
		md["PROXY_CONFIG"] = proxyConfig
	}
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Node{Id: nodeID(pod), Metadata: s}
}

// httpManager is the connection manager of listener 0.0.0.0_80 a proxy got.
func httpManager(t *testing.T, got map[string]*discoveryv3.DiscoveryResponse) (*listenerv3.Listener, *hcmv3.HttpConnectionManager) {
	t.Helper()
	for _, a := range got[resource.ListenerType].GetResources() {
		l := &listenerv3.Listener{}
		if err := a.UnmarshalTo(l); err != nil {
			t.Fatal(err)
		}
		if l.GetName() != "0.0.0.0_80" {
			continue
		}
		for _, f := range l.GetFilterChains()[0].GetFilters() {
			if f.GetName() == wellknown.HTTPConnectionManager {
				cm := &hcmv3.HttpConnectionManager{}
				if err := f.GetTypedConfig().UnmarshalTo(cm); err != nil {
					t.Fatal(err)
				}
				return l, cm
			}
		}
	}
	t.Fatal("no listener 0.0.0.0_80 with a connection manager")
	return nil, nil
}

// The gateway topology a proxy sends in PROXY_CONFIG changes its
// listeners, so it is part of its gateway group: proxies with the same
// topology share one translation, proxies with different ones never get
// each other's listeners, and spelling out istiod's default
// (SANITIZE_SET) is the same as sending nothing.
func TestGatewayTopologyGroupsProxies(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) { o.Generator = core.DefaultGenerator{} })
	h.syncAndWait()
	two := map[string]any{"gatewayTopology": map[string]any{"numTrustedProxies": 2, "proxyProtocol": map[string]any{}}}
	clients := map[string]*adsClient{
		"two-a":   dial(t, h.addr, topologyNode(t, "two-a", two)),
		"two-b":   dial(t, h.addr, topologyNode(t, "two-b", two)),
		"one":     dial(t, h.addr, topologyNode(t, "one", map[string]any{"gatewayTopology": map[string]any{"numTrustedProxies": 1}})),
		"none":    dial(t, h.addr, topologyNode(t, "none", nil)),
		"default": dial(t, h.addr, topologyNode(t, "default", map[string]any{"gatewayTopology": map[string]any{"forwardClientCertDetails": "SANITIZE_SET"}})),
	}
	want := map[string]struct {
		hops          uint32
		proxyProtocol bool
	}{"two-a": {2, true}, "two-b": {2, true}, "one": {1, false}, "none": {0, false}, "default": {0, false}}
	for pod, c := range clients {
		l, cm := httpManager(t, c.syncAll())
		pp := len(l.GetListenerFilters()) > 0 && l.GetListenerFilters()[0].GetName() == wellknown.ProxyProtocol
		if cm.GetXffNumTrustedHops() != want[pod].hops || pp != want[pod].proxyProtocol {
			t.Errorf("%s: xff_num_trusted_hops %d, PROXY protocol %v; want %+v", pod, cm.GetXffNumTrustedHops(), pp, want[pod])
		}
		if cm.GetForwardClientCertDetails() != hcmv3.HttpConnectionManager_SANITIZE_SET || !cm.GetSetCurrentClientCertDetails().GetCert() {
			t.Errorf("%s: client cert details %v %v, want istiod's default", pod, cm.GetForwardClientCertDetails(), cm.GetSetCurrentClientCertDetails())
		}
	}
	groups := map[string]string{}
	for _, p := range h.s.Adsz(nil).Proxies {
		groups[strings.Split(strings.Split(p.ID, "~")[2], ".")[0]] = p.GatewayGroup
	}
	if groups["two-a"] == "" || groups["two-a"] != groups["two-b"] {
		t.Errorf("groups %v: two-a and two-b send the same topology and should share a group", groups)
	}
	if !strings.Contains(groups["two-a"], "/topology/") {
		t.Errorf("group %q of two-a should name its topology", groups["two-a"])
	}
	if groups["one"] == groups["two-a"] || groups["one"] == groups["none"] || groups["two-a"] == groups["none"] {
		t.Errorf("groups %v: different topologies must not share a group", groups)
	}
	if groups["default"] != groups["none"] || strings.Contains(groups["none"], "/topology/") {
		t.Errorf("groups %v: SANITIZE_SET spelled out is the default topology and should share the group of a proxy sending none", groups)
	}
	if h.snapshot(nodeID("two-a")) != h.snapshot(nodeID("two-b")) {
		t.Error("two-a and two-b do not share one snapshot")
	}
}

// A PROXY_CONFIG istiod could not read refuses the stream with the node
// and the metadata named, as istiod refuses node metadata it cannot parse.
func TestMalformedProxyConfigIsRefused(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	c := dial(t, h.addr, topologyNode(t, "bad", map[string]any{"gatewayTopology": map[string]any{"numTrustedProxies": "many"}}))
	c.subscribe(resource.ClusterType)
	err := c.streamError()
	if status.Code(err) == codes.OK || !strings.Contains(err.Error(), "PROXY_CONFIG") || !strings.Contains(err.Error(), nodeID("bad")) {
		t.Errorf("stream error %v; want a refusal naming the node and PROXY_CONFIG", err)
	}
	// Other proxies are served as before.
	dial(t, h.addr, topologyNode(t, "good", nil)).syncAll()
}

// A proxy sending no PROXY_CONFIG is built with the mesh config's
// defaultConfig.gatewayTopology in force (istiod's ProxyConfigOrDefault);
// one sending its own keeps it, whatever the mesh says.
func TestMeshDefaultGatewayTopology(t *testing.T) {
	cfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte("defaultConfig:\n  gatewayTopology:\n    numTrustedProxies: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Generator = core.DefaultGenerator{}
		o.Mesh = func() *mesh.Config { return cfg }
	})
	h.syncAndWait()
	if _, cm := httpManager(t, dial(t, h.addr, topologyNode(t, "none", nil)).syncAll()); cm.GetXffNumTrustedHops() != 3 {
		t.Errorf("proxy without PROXY_CONFIG: xff_num_trusted_hops %d, want the mesh default 3", cm.GetXffNumTrustedHops())
	}
	own := map[string]any{"gatewayTopology": map[string]any{"numTrustedProxies": 1}}
	if _, cm := httpManager(t, dial(t, h.addr, topologyNode(t, "own", own)).syncAll()); cm.GetXffNumTrustedHops() != 1 {
		t.Errorf("proxy with PROXY_CONFIG: xff_num_trusted_hops %d, want its own 1", cm.GetXffNumTrustedHops())
	}
}
