package gatewayapi_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// BenchmarkConvert converts one Gateway with 2,000 HTTPRoutes over 200
// hostnames (and a wildcard route), each with two path matches: the whole
// conversion a change triggers, each route validated as the store would.
func BenchmarkConvert(b *testing.B) {
	const routes, hosts = 2000, 200
	in := gatewayapi.Input{
		GatewayClasses: []*gw.GatewayClass{class},
		Gateways:       []*gw.Gateway{edge},
		Services: func(ns, name string) *corev1.Service {
			return &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
		},
	}
	prefix, exact := gw.PathMatchPathPrefix, gw.PathMatchExact
	port := gw.PortNumber(8080)
	for i := range routes {
		host := gw.Hostname(fmt.Sprintf("h%d.example.com", i%hosts))
		if i == 0 {
			host = "*.example.com"
		}
		in.HTTPRoutes = append(in.HTTPRoutes, &gw.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: fmt.Sprintf("r%d", i)},
			Spec: gw.HTTPRouteSpec{
				CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
				Hostnames:       []gw.Hostname{host},
				Rules: []gw.HTTPRouteRule{{
					Matches: []gw.HTTPRouteMatch{
						{Path: &gw.HTTPPathMatch{Type: &prefix, Value: new(fmt.Sprintf("/p%d", i))}},
						{Path: &gw.HTTPPathMatch{Type: &exact, Value: new(fmt.Sprintf("/e%d", i))}},
					},
					BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}},
				}},
			},
		})
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		cfgs, errs := gatewayapi.Convert(in, gatewayapi.Options{})
		if len(errs) != 0 {
			b.Fatal(errs)
		}
		n = len(cfgs)
	}
	b.ReportMetric(float64(n), "configs")
}
