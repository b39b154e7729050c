package xds

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
	telemetryv1 "istio.io/api/telemetry/v1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// telemetryNode is a gateway pod of istio-system with labels.
func telemetryNode(t *testing.T, pod string, labels map[string]any) *corev3.Node {
	t.Helper()
	s, err := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", "LABELS": labels})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.Node{Id: nodeID(pod), Metadata: s}
}

func telemetryObject(name string, spec *telemetryv1.Telemetry) config.Config {
	return config.Config{Meta: config.Meta{Kind: schema.Telemetry, Namespace: "istio-system", Name: name}, Spec: spec}
}

// Which Telemetry applies to a gateway depends on its labels (selector)
// and its Gateway API gateway (targetRefs), so both are part of its
// gateway group: proxies selected by different Telemetries get different
// listeners, and proxies selected by the same ones share one snapshot.
func TestTelemetryGroupsProxies(t *testing.T) {
	cfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte(`
extensionProviders:
- name: gold-log
  envoyFileAccessLog: {path: /dev/stdout}
- name: edge-log
  envoyFileAccessLog: {path: /var/log/edge.log}
`))
	if err != nil {
		t.Fatal(err)
	}
	objs := append(base(),
		telemetryObject("gold", &telemetryv1.Telemetry{
			Selector:      &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"tier": "gold"}},
			AccessLogging: []*telemetryv1.AccessLogging{{Providers: []*telemetryv1.ProviderRef{{Name: "gold-log"}}}},
		}),
		telemetryObject("edge-gw", &telemetryv1.Telemetry{
			TargetRefs:    []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "edge-gw"}},
			AccessLogging: []*telemetryv1.AccessLogging{{Providers: []*telemetryv1.ProviderRef{{Name: "edge-log"}}}},
		}))
	h := newHarnessWith(t, newTestStore(objs...), func(o *Options) {
		o.Generator = core.DefaultGenerator{}
		o.Mesh = func() *mesh.Config { return cfg }
	})
	h.syncAndWait()
	gold := map[string]any{"istio": "ingressgateway", "tier": "gold"}
	plain := map[string]any{"istio": "ingressgateway"}
	edge := map[string]any{"istio": "ingressgateway", "gateway.networking.k8s.io/gateway-name": "edge-gw"}
	pods := map[string]map[string]any{"gold-a": gold, "gold-b": gold, "plain-a": plain, "plain-b": plain, "edge": edge}
	want := map[string]string{"gold-a": "/dev/stdout", "gold-b": "/dev/stdout", "plain-a": "", "plain-b": "", "edge": "/var/log/edge.log"}
	for pod, labels := range pods {
		_, cm := httpManager(t, dial(t, h.addr, telemetryNode(t, pod, labels)).syncAll())
		got := ""
		if logs := cm.GetAccessLog(); len(logs) == 1 {
			got = string(logs[0].GetTypedConfig().GetValue())
		} else if len(logs) > 1 {
			t.Errorf("%s: %d access loggers, want at most one", pod, len(logs))
		}
		if (want[pod] == "") != (got == "") || !strings.Contains(got, want[pod]) {
			t.Errorf("%s: access logger %q, want one writing to %q", pod, got, want[pod])
		}
		if cm.GetTracing() == nil || cm.GetRequestIdExtension() == nil {
			t.Errorf("%s: no tracing or request ID extension; istiod's default enableTracing sets both", pod)
		}
	}
	groups := map[string]string{}
	for _, p := range h.s.Adsz(nil).Proxies {
		groups[strings.Split(strings.Split(p.ID, "~")[2], ".")[0]] = p.GatewayGroup
	}
	if groups["gold-a"] == "" || groups["gold-a"] != groups["gold-b"] || groups["plain-a"] != groups["plain-b"] {
		t.Errorf("groups %v: proxies selected by the same Telemetries should share a group", groups)
	}
	if groups["gold-a"] == groups["plain-a"] || groups["edge"] == groups["plain-a"] || groups["edge"] == groups["gold-a"] {
		t.Errorf("groups %v: proxies selected by different Telemetries must not share a group", groups)
	}
	if h.snapshot(nodeID("gold-a")) != h.snapshot(nodeID("gold-b")) || h.snapshot(nodeID("plain-a")) != h.snapshot(nodeID("plain-b")) {
		t.Error("proxies with the same telemetry do not share one snapshot")
	}
}
