package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func baseVirtualService() *networking.VirtualService {
	return &networking.VirtualService{
		Hosts:    []string{"example.com"},
		Gateways: []string{"default/public"},
		Http: []*networking.HTTPRoute{{
			Name:  "main",
			Match: []*networking.HTTPMatchRequest{{Uri: prefix("/")}},
			Route: []*networking.HTTPRouteDestination{{
				Destination: &networking.Destination{
					Host: "reviews.default.svc.cluster.local",
					Port: &networking.PortSelector{Number: 9080},
				},
			}},
		}},
	}
}

type vs = networking.VirtualService

func dest(host string) *networking.Destination { return &networking.Destination{Host: host} }

func httpDests(weights ...int32) []*networking.HTTPRouteDestination {
	var out []*networking.HTTPRouteDestination
	for i, w := range weights {
		out = append(out, &networking.HTTPRouteDestination{
			Destination: &networking.Destination{Host: "reviews", Subset: "v" + string(rune('1'+i))}, Weight: w,
		})
	}
	return out
}

func l4Dests(weights ...int32) []*networking.RouteDestination {
	var out []*networking.RouteDestination
	for _, w := range weights {
		out = append(out, &networking.RouteDestination{Destination: dest("db.example.com"), Weight: w})
	}
	return out
}

// asDelegate turns the base into a delegate VirtualService: no hosts and
// no gateways.
func asDelegate(v *vs) { v.Hosts = nil; v.Gateways = nil }

func TestVirtualServiceHostsAndGateways(t *testing.T) {
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "base is valid"},
		{name: "short name host", mutate: func(v *vs) { v.Hosts = []string{"reviews"} }},
		{name: "IP host", mutate: func(v *vs) { v.Hosts = []string{"192.168.1.1"} }},
		{name: "host * on a gateway", mutate: func(v *vs) { v.Hosts = []string{"*"} }},
		{name: "host * on the mesh", mutate: func(v *vs) { v.Hosts = []string{"*"}; v.Gateways = nil },
			want: []string{"spec.hosts[0]"}, msg: "only allowed when"},
		{name: "host * with the mesh gateway", mutate: func(v *vs) { v.Hosts = []string{"*"}; v.Gateways = append(v.Gateways, "mesh") },
			want: []string{"spec.hosts[0]"}, msg: "only allowed when"},
		{name: "no hosts but gateways", mutate: func(v *vs) { v.Hosts = nil },
			want: []string{"spec.hosts"}, msg: "at least one host"},
		{name: "delegate", mutate: asDelegate},
		{name: "delegate with a tcp route", mutate: func(v *vs) {
			asDelegate(v)
			v.Tcp = []*networking.TCPRoute{{Route: l4Dests(0)}}
		}, want: []string{"spec.tcp"}, msg: "cannot have tcp routes"},
		{name: "delegate with a tls route", mutate: func(v *vs) {
			asDelegate(v)
			v.Tls = []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.example.com"}}}, Route: l4Dests(0)}}
		}, want: []string{"spec.tls", "spec.tls[0].match[0].sniHosts[0]"}, msg: "cannot have tls routes"},
		{name: "invalid host", mutate: func(v *vs) { v.Hosts = []string{"bad_host.example.com"} },
			want: []string{"spec.hosts[0]"}, msg: "DNS-1123"},
		{name: "namespaced host", mutate: func(v *vs) { v.Hosts = []string{"prod/example.com"} },
			want: []string{"spec.hosts[0]"}, msg: "namespace"},
		{name: "partial wildcard host", mutate: func(v *vs) { v.Hosts = []string{"*-api.example.com"} },
			want: []string{"spec.hosts[0]"}, msg: "wildcard"},
		{name: "duplicate host", mutate: func(v *vs) { v.Hosts = []string{"example.com", "a.example.com", "example.com"} },
			want: []string{"spec.hosts[2]"}, msg: "duplicates or overlaps spec.hosts[0]"},
		{name: "wildcard overlapping a host", mutate: func(v *vs) { v.Hosts = []string{"*.example.com", "a.example.com"} },
			want: []string{"spec.hosts[1]"}, msg: "overlaps"},
		{name: "* overlapping a host", mutate: func(v *vs) { v.Hosts = []string{"*", "example.com"} },
			want: []string{"spec.hosts[1]"}, msg: "overlaps"},
		{name: "wildcard and its apex", mutate: func(v *vs) { v.Hosts = []string{"*.example.com", "example.com"} }},
		{name: "mesh gateway", mutate: func(v *vs) { v.Gateways = []string{"mesh"} }},
		{name: "legacy gateway names", mutate: func(v *vs) { v.Gateways = []string{"public", "public.default.svc.cluster.local"} }},
		{name: "gateway with a bad namespace", mutate: func(v *vs) { v.Gateways = []string{"Prod/public"} },
			want: []string{"spec.gateways[0]"}, msg: "namespace"},
		{name: "gateway with a dotted name", mutate: func(v *vs) { v.Gateways = []string{"default/pub.lic"} },
			want: []string{"spec.gateways[0]"}, msg: "name"},
		{name: "gateway with an empty name", mutate: func(v *vs) { v.Gateways = []string{"default/"} },
			want: []string{"spec.gateways[0]"}, msg: "DNS-1123 label"},
		{name: "exportTo", mutate: func(v *vs) { v.ExportTo = []string{".", "prod"} }},
		{name: "exportTo ~", mutate: func(v *vs) { v.ExportTo = []string{"~"} },
			want: []string{"spec.exportTo[0]"}, msg: "only allowed on a ServiceEntry"},
		{name: "exportTo * with others", mutate: func(v *vs) { v.ExportTo = []string{"*", "prod"} },
			want: []string{"spec.exportTo"}, msg: "cannot be combined"},
		{name: "exportTo . and own namespace", mutate: func(v *vs) { v.ExportTo = []string{".", "default"} },
			want: []string{"spec.exportTo[1]"}, msg: "duplicate"},
		{name: "exportTo bad namespace", mutate: func(v *vs) { v.ExportTo = []string{"Prod"} },
			want: []string{"spec.exportTo[0]"}, msg: "namespace"},
		{name: "no routes", mutate: func(v *vs) { v.Http = nil },
			want: []string{"spec.http"}, msg: "at least one http, tcp or tls"},
		{name: "null http route", mutate: func(v *vs) { v.Http[0] = nil },
			want: []string{"spec.http[0]"}, msg: "null"},
		{name: "two unnamed routes", mutate: func(v *vs) {
			v.Http[0].Name = ""
			v.Http = append(v.Http, proto.Clone(v.Http[0]).(*networking.HTTPRoute))
		}},
		{name: "duplicate route name", mutate: func(v *vs) {
			v.Http = append(v.Http, proto.Clone(v.Http[0]).(*networking.HTTPRoute))
		}, want: []string{"spec.http[1].name"}, msg: "duplicate route name"},
	})
}

func TestVirtualServiceDestinations(t *testing.T) {
	rd := func(v *vs) *networking.HTTPRouteDestination { return v.Http[0].Route[0] }
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "missing destination", mutate: func(v *vs) { rd(v).Destination = nil },
			want: []string{"spec.http[0].route[0].destination"}, msg: "required"},
		{name: "null route destination", mutate: func(v *vs) { v.Http[0].Route[0] = nil },
			want: []string{"spec.http[0].route[0]"}, msg: "null"},
		{name: "missing host", mutate: func(v *vs) { rd(v).Destination.Host = "" },
			want: []string{"spec.http[0].route[0].destination.host"}, msg: "host is required"},
		{name: "host *", mutate: func(v *vs) { rd(v).Destination.Host = "*" },
			want: []string{"spec.http[0].route[0].destination.host"}, msg: "not a destination"},
		{name: "invalid host", mutate: func(v *vs) { rd(v).Destination.Host = "reviews_svc" },
			want: []string{"spec.http[0].route[0].destination.host"}, msg: "DNS-1123"},
		{name: "wildcard host", mutate: func(v *vs) { rd(v).Destination.Host = "*.example.com" }},
		{name: "short host", mutate: func(v *vs) { rd(v).Destination.Host = "reviews" }},
		{name: "subset", mutate: func(v *vs) { rd(v).Destination.Subset = "v1" }},
		{name: "invalid subset", mutate: func(v *vs) { rd(v).Destination.Subset = "V1" },
			want: []string{"spec.http[0].route[0].destination.subset"}, msg: "DNS-1123 label"},
		{name: "port 0", mutate: func(v *vs) { rd(v).Destination.Port.Number = 0 },
			want: []string{"spec.http[0].route[0].destination.port.number"}, msg: "1-65535"},
		{name: "port 65536", mutate: func(v *vs) { rd(v).Destination.Port.Number = 65536 },
			want: []string{"spec.http[0].route[0].destination.port.number"}, msg: "1-65535"},
		{name: "no port", mutate: func(v *vs) { rd(v).Destination.Port = nil }},

		// Weights.
		{name: "single destination with a weight", mutate: func(v *vs) { rd(v).Weight = 40 }},
		{name: "weights adding up to 100", mutate: func(v *vs) { v.Http[0].Route = httpDests(90, 10) }},
		{name: "three weights adding up to 100", mutate: func(v *vs) { v.Http[0].Route = httpDests(50, 30, 20) }},
		{name: "zero weight among others", mutate: func(v *vs) { v.Http[0].Route = httpDests(100, 0) }},
		// Weights are relative, as in Istio: 60 and 30 split two to one.
		{name: "relative weights adding up to 90", mutate: func(v *vs) { v.Http[0].Route = httpDests(60, 30) }},
		{name: "weights left out on two destinations", mutate: func(v *vs) { v.Http[0].Route = httpDests(0, 0) },
			want: []string{"spec.http[0].route"}, msg: "add up to 0"},
		{name: "negative weight", mutate: func(v *vs) { rd(v).Weight = -1 },
			want: []string{"spec.http[0].route[0].weight"}, msg: "0-100"},
		{name: "weight above 100", mutate: func(v *vs) { v.Http[0].Route = httpDests(150, -50) },
			want: []string{"spec.http[0].route[0].weight", "spec.http[0].route[1].weight"}, msg: "0-100"},
		{name: "destination headers", mutate: func(v *vs) {
			rd(v).Headers = &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"x-canary": "yes"}}}
		}},
		{name: "destination header with a bad name", mutate: func(v *vs) {
			rd(v).Headers = &networking.Headers{Response: &networking.Headers_HeaderOperations{Add: map[string]string{"bad header": "x"}}}
		}, want: []string{`spec.http[0].route[0].headers.response.add["bad header"]`}, msg: "not a valid header name"},
	})
}

// tcpOnly replaces the base's http routes with one tcp route.
func tcpOnly(v *vs) {
	v.Http = nil
	v.Tcp = []*networking.TCPRoute{{
		Match: []*networking.L4MatchAttributes{{Port: 3306, DestinationSubnets: []string{"10.0.0.0/8", "10.1.2.3"}}},
		Route: []*networking.RouteDestination{{Destination: &networking.Destination{
			Host: "db.example.com", Port: &networking.PortSelector{Number: 3306},
		}}},
	}}
}

// tlsOnly replaces the base's http routes with one tls route.
func tlsOnly(v *vs) {
	v.Http = nil
	v.Hosts = []string{"*.example.com"}
	v.Tls = []*networking.TLSRoute{{
		Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.example.com"}, Port: 443}},
		Route: l4Dests(0),
	}}
}

func TestVirtualServiceTCPAndTLS(t *testing.T) {
	with := func(setup, mutate func(*vs)) func(*vs) {
		return func(v *vs) { setup(v); mutate(v) }
	}
	tcp := func(v *vs) *networking.TCPRoute { return v.Tcp[0] }
	tlsRoute := func(v *vs) *networking.TLSRoute { return v.Tls[0] }
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "tcp route", mutate: tcpOnly},
		{name: "tcp route without match", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match = nil })},
		{name: "null tcp route", mutate: with(tcpOnly, func(v *vs) { v.Tcp[0] = nil }),
			want: []string{"spec.tcp[0]"}, msg: "null"},
		{name: "tcp route without destinations", mutate: with(tcpOnly, func(v *vs) { tcp(v).Route = nil }),
			want: []string{"spec.tcp[0].route"}, msg: "at least one route destination"},
		{name: "tcp bad subnet", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0].DestinationSubnets = []string{"10.0.0.0/33"} }),
			want: []string{"spec.tcp[0].match[0].destinationSubnets[0]"}, msg: "CIDR"},
		{name: "tcp subnet that is a name", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0].DestinationSubnets = []string{"db"} }),
			want: []string{"spec.tcp[0].match[0].destinationSubnets[0]"}, msg: "IP address"},
		{name: "tcp bad port", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0].Port = 70000 }),
			want: []string{"spec.tcp[0].match[0].port"}, msg: "1-65535"},
		{name: "tcp bad source namespace", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0].SourceNamespace = "A" }),
			want: []string{"spec.tcp[0].match[0].sourceNamespace"}, msg: "namespace"},
		{name: "tcp bad source label", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0].SourceLabels = map[string]string{"app": "a/b"} }),
			want: []string{`spec.tcp[0].match[0].sourceLabels["app"]`}, msg: "label value"},
		{name: "tcp bad match gateway", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0].Gateways = []string{"a/b/c"} }),
			want: []string{"spec.tcp[0].match[0].gateways[0]"}, msg: "DNS-1123 label"},
		{name: "null tcp match", mutate: with(tcpOnly, func(v *vs) { tcp(v).Match[0] = nil }),
			want: []string{"spec.tcp[0].match[0]"}, msg: "null"},
		{name: "tcp weights", mutate: with(tcpOnly, func(v *vs) { tcp(v).Route = l4Dests(70, 30) })},
		{name: "tcp relative weights", mutate: with(tcpOnly, func(v *vs) { tcp(v).Route = l4Dests(60, 30) })},
		{name: "tcp weights all zero", mutate: with(tcpOnly, func(v *vs) { tcp(v).Route = l4Dests(0, 0) }),
			want: []string{"spec.tcp[0].route"}, msg: "add up to 0"},
		{name: "tcp destination without host", mutate: with(tcpOnly, func(v *vs) { tcp(v).Route[0].Destination.Host = "" }),
			want: []string{"spec.tcp[0].route[0].destination.host"}, msg: "host is required"},
		{name: "tcp null destination", mutate: with(tcpOnly, func(v *vs) { tcp(v).Route[0] = nil }),
			want: []string{"spec.tcp[0].route[0]"}, msg: "null"},

		{name: "tls route", mutate: tlsOnly},
		{name: "tls wildcard SNI within a wildcard host", mutate: with(tlsOnly, func(v *vs) {
			tlsRoute(v).Match[0].SniHosts = []string{"*.a.example.com", "10.0.0.1"}
		})},
		{name: "null tls route", mutate: with(tlsOnly, func(v *vs) { v.Tls[0] = nil }),
			want: []string{"spec.tls[0]"}, msg: "null"},
		{name: "tls route without match", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Match = nil }),
			want: []string{"spec.tls[0].match"}, msg: "at least one match"},
		{name: "tls match without SNI hosts", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Match[0].SniHosts = nil }),
			want: []string{"spec.tls[0].match[0].sniHosts"}, msg: "at least one SNI host"},
		{name: "SNI host outside the hosts", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Match[0].SniHosts = []string{"other.com"} }),
			want: []string{"spec.tls[0].match[0].sniHosts[0]"}, msg: "not covered"},
		{name: "invalid SNI host", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Match[0].SniHosts = []string{"a..example.com"} }),
			want: []string{"spec.tls[0].match[0].sniHosts[0]"}, msg: "DNS-1123"},
		{name: "tls bad port", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Match[0].Port = 65536 }),
			want: []string{"spec.tls[0].match[0].port"}, msg: "1-65535"},
		{name: "null tls match", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Match[0] = nil }),
			want: []string{"spec.tls[0].match[0]"}, msg: "null"},
		{name: "tls route without destinations", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Route = nil }),
			want: []string{"spec.tls[0].route"}, msg: "at least one route destination"},
		{name: "tls destination with a bad subset", mutate: with(tlsOnly, func(v *vs) { tlsRoute(v).Route[0].Destination.Subset = "a.b" }),
			want: []string{"spec.tls[0].route[0].destination.subset"}, msg: "DNS-1123 label"},
	})
}
