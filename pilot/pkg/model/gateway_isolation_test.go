package model

import (
	"slices"
	"strings"
	"testing"
)

// isolationConfig is a Gateway generated for listener "https" of Gateway
// API Gateway edge/edge, whose allowedRoutes admit edge and team-a, with
// VirtualServices of edge, team-a and evil naming it, and Istio Gateways
// of evil and edge selecting its proxies.
const isolationConfig = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: edge-https-gwapi
  namespace: edge
  annotations: {internal.wayfinder.io/namespace-only: "true", internal.wayfinder.io/gateway-api-listener: https}
spec:
  selector: {gateway.networking.k8s.io/gateway-name: edge}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["edge/*.example.com", "team-a/*.example.com"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: own, namespace: edge}
spec:
  hosts: [own.example.com]
  gateways: [edge-https-gwapi]
  http: [{route: [{destination: {host: web.edge.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tenant, namespace: team-a}
spec:
  hosts: [tenant.example.com]
  gateways: [edge/edge-https-gwapi]
  http: [{route: [{destination: {host: web.team-a.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: steal, namespace: evil}
spec:
  hosts: [steal.example.com]
  gateways: [mesh, edge/edge-https-gwapi, evil-gw]
  http: [{route: [{destination: {host: web.evil.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: evil-gw, namespace: evil}
spec:
  selector: {gateway.networking.k8s.io/gateway-name: edge}
  servers: [{port: {number: 9000, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: extra, namespace: edge}
spec:
  selector: {gateway.networking.k8s.io/gateway-name: edge}
  servers: [{port: {number: 9001, name: http, protocol: HTTP}, hosts: ["*"]}]
`

// A VirtualService of a namespace the generated Gateway's hosts do not
// name is not bound to it and is reported on spec.gateways; those of the
// admitted namespaces are bound, and the refused one keeps its other
// bindings. The same after WithRouting, reported once.
func TestGatewayAPIRefusesForeignVirtualServices(t *testing.T) {
	store := parseStore(t, isolationConfig)
	for name, ps := range map[string]*PushContext{"new": NewPushContext(store), "WithRouting": NewPushContext(store).WithRouting(store)} {
		got := names(ps.VirtualServicesForGateway("edge/edge-https-gwapi"))
		if want := []string{"edge/own", "team-a/tenant"}; !slices.Equal(got, want) {
			t.Errorf("%s: bound to edge/edge-https-gwapi: %v, want %v", name, got, want)
		}
		if got := names(ps.VirtualServicesForGateway("evil/evil-gw")); !slices.Equal(got, []string{"evil/steal"}) {
			t.Errorf("%s: the refused VirtualService lost its other binding: %v", name, got)
		}
		var vsErrs, gwErrs []string
		for _, e := range ps.Errors {
			switch e.Key.String() {
			case "VirtualService evil/steal":
				vsErrs = append(vsErrs, e.Field+": "+e.Message)
			case "Gateway evil/evil-gw":
				gwErrs = append(gwErrs, e.Field+": "+e.Message)
			default:
				t.Errorf("%s: unexpected error %v", name, e)
			}
			if e.Warning {
				t.Errorf("%s: a refusal is an error, not a warning: %v", name, e)
			}
		}
		if len(vsErrs) != 1 || !strings.HasPrefix(vsErrs[0], "spec.gateways[1]: ") || !strings.Contains(vsErrs[0], "do not admit namespace evil") ||
			!strings.Contains(vsErrs[0], "listener https of Gateway API Gateway edge/edge") {
			t.Errorf("%s: VirtualService errors %q, want one on spec.gateways[1] naming the listener and namespace", name, vsErrs)
		}
		if len(gwErrs) != 1 || !strings.HasPrefix(gwErrs[0], "spec.selector: ") || !strings.Contains(gwErrs[0], "Gateway API Gateway edge/edge") {
			t.Errorf("%s: Gateway errors %q, want one on spec.selector", name, gwErrs)
		}
	}
}

// A proxy labelled as a Gateway API Gateway's gets the Gateways of its own
// namespace only; a proxy without that label still gets Gateways of any
// namespace its selector matches.
func TestGatewayAPIProxyTakesOwnNamespace(t *testing.T) {
	ps := NewPushContext(parseStore(t, isolationConfig))
	gatewayAPI := map[string]string{GatewayAPIProxyLabel: "edge"}
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		want   []string
	}{
		{"edge", gatewayAPI, []string{"edge/edge-https-gwapi", "edge/extra"}},
		// Claiming the label elsewhere only narrows what a proxy gets.
		{"evil", gatewayAPI, []string{"evil/evil-gw"}},
		{"other", gatewayAPI, nil},
	} {
		if got := names(ps.GatewaysForProxy(&Proxy{Namespace: tc.ns, Labels: tc.labels})); !slices.Equal(got, tc.want) {
			t.Errorf("proxy of %s: %v, want %v", tc.ns, got, tc.want)
		}
	}
}

// Hosts are read as the route translator reads them: "./host" is the
// Gateway's namespace, "*/host" and a bare host admit every namespace.
func TestAdmissionHosts(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		ns    string
		want  bool
	}{
		{[]string{"edge/a.com"}, "edge", true},
		{[]string{"edge/a.com"}, "evil", false},
		{[]string{"./a.com"}, "edge", true},
		{[]string{"./a.com"}, "evil", false},
		{[]string{"*/a.com"}, "evil", true},
		{[]string{"a.com"}, "evil", true},
		{[]string{"~/a.com"}, "evil", false},
		{nil, "edge", false},
	} {
		a := &admission{}
		for _, h := range tc.hosts {
			a.add(h, "edge")
		}
		if got := a.admits(tc.ns); got != tc.want {
			t.Errorf("hosts %v admit %s: %v, want %v", tc.hosts, tc.ns, got, tc.want)
		}
	}
}
