package model

import (
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

func nodeWithProxyConfig(t *testing.T, v any) *core.Node {
	t.Helper()
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", ProxyConfigMetadata: v})
	if err != nil {
		t.Fatal(err)
	}
	return &core.Node{Id: "router~10.0.0.1~gw-1.istio-system~istio-system.svc.cluster.local", Metadata: md}
}

func TestParseProxyConfigMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   any
		want GatewayTopology
	}{
		// istio-agent writes PROXY_CONFIG as a JSON object in the
		// bootstrap's node metadata; fields Wayfinder does not know are
		// ignored, as istiod's UnmarshalAllowUnknown ignores them.
		{"object", map[string]any{
			"concurrency":     2,
			"someFutureField": true,
			"gatewayTopology": map[string]any{"numTrustedProxies": 2, "forwardClientCertDetails": "APPEND_FORWARD", "proxyProtocol": map[string]any{}},
		}, GatewayTopology{NumTrustedProxies: 2, ForwardClientCertDetails: meshconfig.ForwardClientCertDetails_APPEND_FORWARD, ProxyProtocol: true}},
		{"string holding JSON", `{"gatewayTopology": {"numTrustedProxies": 1}}`, GatewayTopology{NumTrustedProxies: 1}},
		{"no topology", map[string]any{"concurrency": 2}, GatewayTopology{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProxy(nodeWithProxyConfig(t, tc.md))
			if err != nil {
				t.Fatal(err)
			}
			if p.ProxyConfig == nil {
				t.Fatal("ProxyConfig not set")
			}
			if got := GatewayTopologyOf(p.ProxyConfig); got != tc.want {
				t.Errorf("topology %+v, want %+v", got, tc.want)
			}
		})
	}

	p, err := ParseProxy(nodeWithProxyConfig(t, nil))
	if err == nil || !strings.Contains(err.Error(), "PROXY_CONFIG") {
		t.Errorf("null PROXY_CONFIG: err %v, proxy %+v; want an error naming PROXY_CONFIG", err, p)
	}
	_, err = ParseProxy(nodeWithProxyConfig(t, map[string]any{"gatewayTopology": map[string]any{"numTrustedProxies": "many"}}))
	if err == nil || !strings.Contains(err.Error(), "PROXY_CONFIG") || !strings.Contains(err.Error(), "router~10.0.0.1") {
		t.Errorf("bad numTrustedProxies: err %v; want an error naming the node and PROXY_CONFIG", err)
	}
	p, err = ParseProxy(&core.Node{Id: "router~10.0.0.1~gw-1.istio-system~istio-system.svc.cluster.local"})
	if err != nil || p.ProxyConfig != nil {
		t.Errorf("no metadata: err %v; want no error and no proxy config", err)
	}
}

func TestGatewayTopologyKey(t *testing.T) {
	def := GatewayTopologyOf(nil)
	if def.Key() != "" {
		t.Errorf("default topology key %q, want empty", def.Key())
	}
	// SANITIZE_SET is istiod's default for gateways: spelling it out
	// gives the same listeners, so the same group.
	set := GatewayTopologyOf(&meshconfig.ProxyConfig{GatewayTopology: &meshconfig.Topology{ForwardClientCertDetails: meshconfig.ForwardClientCertDetails_SANITIZE_SET}})
	if set != def || set.Key() != "" {
		t.Errorf("SANITIZE_SET topology %+v key %q, want the default", set, set.Key())
	}
	keys := map[string]GatewayTopology{}
	for _, gt := range []*meshconfig.Topology{
		{NumTrustedProxies: 1},
		{NumTrustedProxies: 2},
		{NumTrustedProxies: 2, ProxyProtocol: &meshconfig.Topology_ProxyProtocolConfiguration{}},
		{ForwardClientCertDetails: meshconfig.ForwardClientCertDetails_SANITIZE},
		{ForwardClientCertDetails: meshconfig.ForwardClientCertDetails_FORWARD_ONLY},
		{ForwardClientCertDetails: meshconfig.ForwardClientCertDetails_APPEND_FORWARD},
		{ForwardClientCertDetails: meshconfig.ForwardClientCertDetails_ALWAYS_FORWARD_ONLY},
		{ProxyProtocol: &meshconfig.Topology_ProxyProtocolConfiguration{}},
	} {
		topo := GatewayTopologyOf(&meshconfig.ProxyConfig{GatewayTopology: gt})
		k := topo.Key()
		if k == "" {
			t.Errorf("%v: empty key for a non-default topology", gt)
		}
		if other, dup := keys[k]; dup {
			t.Errorf("%+v and %+v share key %q", topo, other, k)
		}
		keys[k] = topo
	}
}

func TestGatewayTopologyFor(t *testing.T) {
	cfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte("defaultConfig:\n  gatewayTopology:\n    numTrustedProxies: 3\n    proxyProtocol: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	withMesh := NewScopedPushContext(Scoping{Mesh: cfg}, listStore{})
	noMesh := NewPushContext(listStore{})
	bare := &Proxy{Type: Router, Namespace: "istio-system"}
	own := &Proxy{Type: Router, Namespace: "istio-system", ProxyConfig: &meshconfig.ProxyConfig{GatewayTopology: &meshconfig.Topology{NumTrustedProxies: 1}}}
	empty := &Proxy{Type: Router, Namespace: "istio-system", ProxyConfig: &meshconfig.ProxyConfig{Concurrency: nil}}
	for _, tc := range []struct {
		name  string
		push  *PushContext
		proxy *Proxy
		want  GatewayTopology
	}{
		{"no PROXY_CONFIG takes the mesh default", withMesh, bare, GatewayTopology{NumTrustedProxies: 3, ProxyProtocol: true}},
		{"no PROXY_CONFIG, no mesh config: istiod's default", noMesh, bare, GatewayTopology{}},
		{"PROXY_CONFIG wins", withMesh, own, GatewayTopology{NumTrustedProxies: 1}},
		// istiod takes the node's ProxyConfig whole: istio-agent merged
		// the mesh defaults into it already.
		{"PROXY_CONFIG without topology is not merged with the mesh", withMesh, empty, GatewayTopology{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.push.GatewayTopologyFor(tc.proxy); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// A push context built for a topology keeps its view and indexes.
	v := withMesh.WithGatewayTopology(GatewayTopology{NumTrustedProxies: 1})
	if v.GatewayTopology().NumTrustedProxies != 1 || v.Base() != withMesh || v.View() != withMesh.View() || withMesh.GatewayTopology() != (GatewayTopology{}) {
		t.Errorf("WithGatewayTopology: topology %+v base %p (want %p)", v.GatewayTopology(), v.Base(), withMesh)
	}
	if withMesh.WithGatewayTopology(GatewayTopology{}) != withMesh {
		t.Error("WithGatewayTopology of the same topology should return the push context itself")
	}
}
