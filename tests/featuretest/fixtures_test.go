package featuretest

import (
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

var publicLabels = map[string]string{"istio": "ingressgateway"}

const gatewaysYAML = objects.PublicGatewayYAML + `---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: internal, namespace: istio-system}
spec:
  selector: {istio: internal}
  servers:
  - {name: http, port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*/*"]}
`

const servicesYAML = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.11, labels: {version: v1}}
  - {address: 127.0.0.12, labels: {version: v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews.default.svc.cluster.local
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
`

// routesYAML binds bookinfo.example.com on the public gateway, sending
// PREFIX to subset v1.
func routesYAML(prefix string) string {
	return `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bookinfo, namespace: default}
spec:
  hosts: [bookinfo.example.com]
  gateways: [istio-system/public]
  http:
  - match: [{uri: {prefix: ` + prefix + `}}]
    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v1, port: {number: 9080}}}]
`
}

const internalRoutesYAML = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: internal, namespace: default}
spec:
  hosts: [internal.example.com]
  gateways: [istio-system/internal]
  http:
  - route: [{destination: {host: reviews.default.svc.cluster.local, subset: v2, port: {number: 9080}}}]
`

func baseFiles() map[string]string {
	return map[string]string{
		"gateways.yaml": gatewaysYAML,
		"services.yaml": servicesYAML,
		"routes.yaml":   routesYAML("/reviews"),
		"internal.yaml": internalRoutesYAML,
	}
}

// routePrefixes lists every prefix match in route configuration name, by
// virtual host name.
func routePrefixes(s adsc.State, name string) map[string][]string {
	out := map[string][]string{}
	rc := s.Routes[name]
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if p, ok := r.GetMatch().GetPathSpecifier().(*routev3.RouteMatch_Prefix); ok {
				out[vh.GetName()] = append(out[vh.GetName()], p.Prefix)
			}
		}
	}
	return out
}

func hasPrefix(s adsc.State, routeName, vhost, prefix string) bool {
	return slices.Contains(routePrefixes(s, routeName)[vhost], prefix)
}

// endpointAddresses lists the addresses in a ClusterLoadAssignment, sorted.
func endpointAddresses(s adsc.State, cluster string) []string {
	var out []string
	for _, le := range s.Endpoints[cluster].GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			out = append(out, lb.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		}
	}
	slices.Sort(out)
	return out
}

func domains(s adsc.State, routeName string) []string {
	var out []string
	for _, vh := range s.Routes[routeName].GetVirtualHosts() {
		out = append(out, vh.GetDomains()...)
	}
	slices.Sort(out)
	return out
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// allACKed reports whether every type has been accepted at least once.
func allACKed(s adsc.State) bool {
	for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType, adsc.RouteType} {
		if s.Types[typ].ACKs == 0 {
			return false
		}
	}
	return true
}
