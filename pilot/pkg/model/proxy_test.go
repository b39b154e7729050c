package model

import (
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

func node(t *testing.T, id string, md map[string]any) *core.Node {
	t.Helper()
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return &core.Node{Id: id, Metadata: s}
}

func TestParseProxy(t *testing.T) {
	p, err := ParseProxy(node(t, "router~10.1.2.3~gw-7d9.istio-system~istio-system.svc.cluster.local", map[string]any{
		"LABELS":     map[string]any{"istio": "ingressgateway", "app": "gw"},
		"CLUSTER_ID": "Kubernetes",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != Router || p.IPAddress != "10.1.2.3" || p.PodName != "gw-7d9" || p.Namespace != "istio-system" ||
		p.DNSDomain != "istio-system.svc.cluster.local" || p.ClusterID != "Kubernetes" {
		t.Errorf("parsed %+v", p)
	}
	if p.Labels["istio"] != "ingressgateway" || p.Labels["app"] != "gw" || len(p.Labels) != 2 {
		t.Errorf("labels %v", p.Labels)
	}
}

func TestParseProxyNamespaceMetadataWins(t *testing.T) {
	p, err := ParseProxy(node(t, "router~10.1.2.3~gw~cluster.local", map[string]any{"NAMESPACE": "edge", "GENERATOR": "grpc"}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Namespace != "edge" || p.PodName != "gw" || p.Generator != "grpc" {
		t.Errorf("parsed %+v", p)
	}
}

func TestParseProxyErrors(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"", "node id is empty"},
		{"router~10.0.0.1~gw.ns", "want 4 parts"},
		{"gateway~10.0.0.1~gw.ns~ns.svc.cluster.local", `type "gateway"`},
		{"router~10.0.0.1~gw~ns.svc.cluster.local", "no namespace"},
	} {
		_, err := ParseProxy(&core.Node{Id: tc.id})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("id %q: err %v, want it to contain %q", tc.id, err, tc.want)
		}
	}
	if _, err := ParseProxy(nil); err == nil {
		t.Error("nil node: want error")
	}
}
