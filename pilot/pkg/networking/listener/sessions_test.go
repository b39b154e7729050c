package listener

import (
	"slices"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// httpFilters are the HTTP filter names of the port 80 listener built for
// a Gateway and a VirtualService with annotations.
func httpFilters(t *testing.T, annotations string) []string {
	t.Helper()
	cfgs, errs := manifest.Parse("test.yaml", []byte(`
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: v
  namespace: default
  annotations: {`+annotations+`}
spec:
  hosts: [foo.com]
  gateways: [gw]
  http: [{name: a, route: [{destination: {host: reviews.default.svc.cluster.local}}]}]
`), manifest.Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	push := model.NewPushContext(memory.New(cfgs))
	ls, lerrs := BuildGatewayListeners(push, model.MergeGateways(push.Gateways()))
	if len(lerrs) > 0 || len(ls) != 1 {
		t.Fatalf("listeners %v, errors %v", ls, lerrs)
	}
	cm := &hcmv3.HttpConnectionManager{}
	if err := ls[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(cm); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range cm.GetHttpFilters() {
		out = append(out, f.GetName())
	}
	return out
}

// The stateful session filter is in the chain, before the router, only
// when a VirtualService bound to the Gateway carries sessions.
func TestStatefulSessionFilterOnlyWithSessions(t *testing.T) {
	const generated = `"` + model.GatewayAPIRoutesAnnotation + `": "true"`
	plain := httpFilters(t, generated)
	if slices.Contains(plain, "envoy.filters.http.stateful_session") {
		t.Errorf("filters %v: the stateful session filter without any session", plain)
	}
	with := httpFilters(t, generated+`, "`+model.GatewayAPISessionsAnnotation+`": '{"a":{"header":"x-s"}}'`)
	want := slices.Insert(slices.Clone(plain), len(plain)-1, "envoy.filters.http.stateful_session")
	if !slices.Equal(with, want) {
		t.Errorf("filters %v, want %v", with, want)
	}
}
