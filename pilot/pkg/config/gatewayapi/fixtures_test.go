package gatewayapi_test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// The objects most tests start from: class handled by Wayfinder, edge of
// that class with one HTTP listener, and routes to a Service of edge's
// namespace (the Kubernetes source's tests have the same ones).
var (
	class = &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}
	edge  = &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
	}}
)

func routeTo(name, service string) *gw.HTTPRoute {
	port := gw.PortNumber(8080)
	return &gw.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: name}, Spec: gw.HTTPRouteSpec{
		CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
		Hostnames:       []gw.Hostname{gw.Hostname(name + ".example.com")},
		Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
			BackendObjectReference: gw.BackendObjectReference{Name: gw.ObjectName(service), Port: &port}}}}}},
	}}
}
