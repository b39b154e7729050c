package gatewayapi_test

import (
	"os"
	"slices"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// A Gateway's configs reach the proxies labelled with its name in its own
// namespace, and never a proxy of another namespace with the same label.
func TestGatewayServedOnlyInItsNamespace(t *testing.T) {
	data, err := os.ReadFile("testdata/http-precedence.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgs, _ := gatewayapi.Convert(decode(t, data).kube, gatewayapi.Options{})
	push := model.NewPushContext(memory.New(cfgs))
	labels := map[string]string{gatewayapi.GatewayNameLabel: "edge"}
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		want   []string
	}{
		{"edge-ns", labels, []string{"edge-http-gwapi"}},
		{"shop", labels, nil},
		{"istio-system", labels, nil},
		{"edge-ns", map[string]string{gatewayapi.GatewayNameLabel: "foreign"}, nil},
		{"edge-ns", map[string]string{"istio": "ingressgateway"}, nil},
	} {
		var got []string
		for _, g := range push.GatewaysForProxy(&model.Proxy{Type: model.Router, Namespace: tc.ns, Labels: tc.labels}) {
			got = append(got, g.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("proxy %v in %s gets %v, want %v", tc.labels, tc.ns, got, tc.want)
		}
	}
}

// Conversion is deterministic whatever the order of its inputs.
func TestConvertIgnoresInputOrder(t *testing.T) {
	data, err := os.ReadFile("testdata/refusals.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := decode(t, data).kube
	want, wantErrs := gatewayapi.Convert(in, gatewayapi.Options{})
	slices.Reverse(in.Gateways)
	slices.Reverse(in.HTTPRoutes)
	slices.Reverse(in.ReferenceGrants)
	got, gotErrs := gatewayapi.Convert(in, gatewayapi.Options{})
	if len(got) != len(want) || len(gotErrs) != len(wantErrs) {
		t.Fatalf("%d configs, %d errors; reversed input: %d, %d", len(want), len(wantErrs), len(got), len(gotErrs))
	}
	for i := range want {
		if !configEqual(want[i], got[i]) {
			t.Errorf("config %d: %s differs from %s with inputs reversed", i, want[i].Key(), got[i].Key())
		}
	}
}
