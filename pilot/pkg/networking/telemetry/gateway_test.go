package telemetry

import (
	"strings"
	"testing"

	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

// ForProxy resolves provider services against the proxy's view: a
// provider whose service has the port gets its logger; one whose service
// lacks the port gets none (its cluster would not exist) and is named in
// Problems; and the key follows what goes on the listeners.
func TestForProxyLeavesOutProvidersWithoutCluster(t *testing.T) {
	cfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte(`
extensionProviders:
- {name: als, envoyHttpAls: {service: als.istio-system.svc.cluster.local, port: 9000}}
- {name: wrong-port, envoyHttpAls: {service: als.istio-system.svc.cluster.local, port: 9001}}
`))
	if err != nil {
		t.Fatal(err)
	}
	push := func(providers ...string) *model.PushContext {
		var refs []*telemetryv1.ProviderRef
		for _, p := range providers {
			refs = append(refs, &telemetryv1.ProviderRef{Name: p})
		}
		tel := objects.New(schema.Telemetry, "istio-system", "mesh-default",
			&telemetryv1.Telemetry{AccessLogging: []*telemetryv1.AccessLogging{{Providers: refs}}})
		store := memory.New([]config.Config{objects.ServiceEntry("istio-system", "als", "als.istio-system.svc.cluster.local", 9000, "127.0.0.1"), tel})
		return model.NewScopedPushContext(model.Scoping{Mesh: cfg}, store)
	}
	p := &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}

	good := ForProxy(push("als"), p)
	if len(good.HTTPAccessLogs) != 1 || len(good.Problems) != 0 {
		t.Fatalf("als: %d loggers, problems %v; want one, none", len(good.HTTPAccessLogs), good.Problems)
	}
	if len(good.Clusters) != 1 || good.Clusters[0].Name != "outbound|9000||als.istio-system.svc.cluster.local" {
		t.Errorf("clusters %+v", good.Clusters)
	}
	bad := ForProxy(push("wrong-port"), p)
	if len(bad.HTTPAccessLogs) != 0 || len(bad.Problems) != 1 || !strings.Contains(bad.Problems[0].Error(), "no port 9001") {
		t.Errorf("wrong-port: %d loggers, problems %v; want none and the port named", len(bad.HTTPAccessLogs), bad.Problems)
	}
	if Key(good.Gateway()) != Key(ForProxy(push("als"), p).Gateway()) {
		t.Error("the same telemetry gives two keys")
	}
	if Key(good.Gateway()) == Key(bad.Gateway()) {
		t.Error("different telemetry gives one key")
	}
}
