package model

import (
	"slices"
	"testing"
)

// A Gateway marked namespace-only reaches proxies its selector matches in
// its own namespace and no other; an unmarked Gateway ignores namespaces.
func TestGatewaysForProxyNamespaceOnly(t *testing.T) {
	ps := NewPushContext(parseStore(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: edge
  namespace: team-a
  annotations: {internal.wayfinder.io/namespace-only: "true"}
spec:
  selector: {app: edge}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: shared, namespace: istio-system}
spec:
  selector: {app: edge}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
`))
	// Not the Gateway API proxy label: those proxies take their own
	// namespace's Gateways only (TestGatewayAPIProxyTakesOwnNamespace).
	labels := map[string]string{"app": "edge"}
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"team-a", []string{"istio-system/shared", "team-a/edge"}},
		{"team-b", []string{"istio-system/shared"}},
		{"", []string{"istio-system/shared"}},
	} {
		got := names(ps.GatewaysForProxy(&Proxy{Namespace: tc.ns, Labels: labels}))
		if !slices.Equal(got, tc.want) {
			t.Errorf("proxy in namespace %q gets %v, want %v", tc.ns, got, tc.want)
		}
	}
}
