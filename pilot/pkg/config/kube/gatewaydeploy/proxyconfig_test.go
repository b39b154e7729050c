package gatewaydeploy

import (
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// renderedProxy is the proxy Wayfinder sees when a pod of g's Deployment
// connects: its bootstrap's node, parsed as the server parses it.
func renderedProxy(t *testing.T, gateway string, opts Options) *model.Proxy {
	t.Helper()
	objs, err := Render(readGateway(t, []byte(gateway)), opts)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON([]byte(objs.ConfigMap.Data[bootstrapFile]))
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatal(err)
	}
	node := b.GetNode()
	node.Id = "router~10.0.0.1~edge-abc.apps~apps.svc.cluster.local" // --service-node
	p, err := model.ParseProxy(node)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The annotation is merged over the mesh config's defaultConfig, as
// istio-agent merges it: a field the annotation leaves alone keeps the
// mesh's value, one it sets replaces it. Without the annotation the
// proxies send no PROXY_CONFIG, so the server applies the mesh config in
// force at each push.
func TestProxyConfigAnnotationMergedOverMeshDefaults(t *testing.T) {
	opts := testOptions()
	opts.DefaultProxyConfig = func() *meshconfig.ProxyConfig {
		pc := mesh.DefaultProxyConfig()
		pc.GatewayTopology = &meshconfig.Topology{NumTrustedProxies: 3}
		pc.ProxyMetadata = map[string]string{"A": "mesh", "B": "mesh"}
		return pc
	}
	annotated := `{metadata: {name: edge, namespace: apps, annotations: {proxy.istio.io/config: "{concurrency: 2, proxyMetadata: {B: gw}}"}},
		spec: {gatewayClassName: wayfinder, listeners: [{name: http, port: 80, protocol: HTTP}]}}`
	p := renderedProxy(t, annotated, opts)
	if p.ProxyConfig == nil {
		t.Fatal("no PROXY_CONFIG in the bootstrap of an annotated Gateway")
	}
	if got := model.GatewayTopologyOf(p.ProxyConfig); got != (model.GatewayTopology{NumTrustedProxies: 3}) {
		t.Errorf("topology %+v, want the mesh default's (3 trusted proxies)", got)
	}
	if p.ProxyConfig.GetConcurrency().GetValue() != 2 || p.ProxyConfig.GetProxyMetadata()["A"] != "mesh" || p.ProxyConfig.GetProxyMetadata()["B"] != "gw" {
		t.Errorf("proxy config %v: want concurrency 2 and proxyMetadata A=mesh B=gw", p.ProxyConfig)
	}

	// spec.infrastructure.annotations win over the Gateway's own, as in
	// istiod's deployment controller.
	infra := `{metadata: {name: edge, namespace: apps, annotations: {proxy.istio.io/config: "{gatewayTopology: {numTrustedProxies: 9}}"}},
		spec: {gatewayClassName: wayfinder, infrastructure: {annotations: {proxy.istio.io/config: "{gatewayTopology: {numTrustedProxies: 1}}"}},
		listeners: [{name: http, port: 80, protocol: HTTP}]}}`
	if got := model.GatewayTopologyOf(renderedProxy(t, infra, opts).ProxyConfig); got.NumTrustedProxies != 1 {
		t.Errorf("topology %+v, want spec.infrastructure's (1 trusted proxy)", got)
	}

	plain := `{metadata: {name: edge, namespace: apps}, spec: {gatewayClassName: wayfinder, listeners: [{name: http, port: 80, protocol: HTTP}]}}`
	if p := renderedProxy(t, plain, opts); p.ProxyConfig != nil {
		t.Errorf("a Gateway without the annotation sends PROXY_CONFIG %v, want none", p.ProxyConfig)
	}
}
