package featuretest

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

const listenerSetGatewayYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: wayfinder}
spec: {controllerName: wayfinder.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: wayfinder
  allowedListeners: {namespaces: {from: Same}}
  listeners:
  - {name: http, port: 8080, protocol: HTTP, hostname: "*.example.com"}
`

const listenerSetYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: shop, namespace: default}
spec:
  parentRef: {name: edge}
  listeners:
  - {name: http, port: 9090, protocol: HTTP, hostname: shop.example.com}
  - {name: clash, port: 8080, protocol: TCP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: default}
spec:
  parentRefs: [{kind: ListenerSet, name: shop, sectionName: http}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /set}}]
    backendRefs: [{name: reviews, port: 9080}]
`

// File mode serves a ListenerSet from the folder: its listener reaches the
// parent Gateway's proxies on its own port with the route attached through
// the set, the listener clashing with the Gateway's is refused, the status
// is in /debug/configz, and removing the file withdraws the listener.
func TestGatewayAPIFileModeListenerSet(t *testing.T) {
	e := newEnv(t, map[string]string{
		"services.yaml": servicesYAML,
		"gwapi.yaml":    listenerSetGatewayYAML,
		"sets.yaml":     listenerSetYAML,
	})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	waitFor(t, edge, "the ListenerSet's route on listener 9090", func(s adsc.State) bool {
		return allACKed(s) && hasPathPrefix(s, "http.9090", "shop.example.com:9090", "/set")
	})
	cz := waitConfigz(t, e, "the ListenerSet's status", func(cz debugapi.Configz) bool {
		return cz.GatewayAPI != nil && len(cz.GatewayAPI.ListenerSets) == 1
	})
	ls := cz.GatewayAPI.ListenerSets[0].Status
	if !hasCondition(ls.Conditions, "Accepted", "True") || !hasCondition(ls.Conditions, "Programmed", "True") || len(ls.Listeners) != 2 {
		t.Fatalf("ListenerSet status %+v, want Accepted and Programmed with two listeners", ls)
	}
	if l := ls.Listeners[0]; l.AttachedRoutes != 1 || !hasCondition(l.Conditions, "Programmed", "True") {
		t.Errorf("listener http %+v, want one attached route, Programmed", l)
	}
	if l := ls.Listeners[1]; !hasReason(l.Conditions, "Conflicted", "ProtocolConflict") || !hasCondition(l.Conditions, "Accepted", "False") {
		t.Errorf("listener clash %+v, want Conflicted ProtocolConflict, not Accepted", l)
	}
	if g := cz.GatewayAPI.Gateways[0].Status; g.AttachedListenerSets == nil || *g.AttachedListenerSets != 1 {
		t.Errorf("Gateway attachedListenerSets %v, want 1", g.AttachedListenerSets)
	}
	e.remove("sets.yaml")
	waitFor(t, edge, "the ListenerSet's listener gone", func(s adsc.State) bool {
		return allACKed(s) && !hasPathPrefix(s, "http.9090", "shop.example.com:9090", "/set") && s.Listeners["0.0.0.0_9090"] == nil
	})
}
