package validation_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func baseServiceEntry() *networking.ServiceEntry {
	return &networking.ServiceEntry{
		Hosts:      []string{"api.example.com"},
		Ports:      []*networking.ServicePort{{Number: 443, Protocol: "TLS", Name: "tls"}},
		Resolution: networking.ServiceEntry_DNS,
		Location:   networking.ServiceEntry_MESH_EXTERNAL,
	}
}

type se = networking.ServiceEntry

type endpoint = networking.WorkloadEntry

// static switches the base to STATIC resolution with the given endpoints.
func static(eps ...*endpoint) func(*se) {
	return func(s *se) {
		s.Resolution = networking.ServiceEntry_STATIC
		s.Endpoints = eps
	}
}

// dnsWith keeps DNS resolution and sets endpoints.
func dnsWith(eps ...*endpoint) func(*se) { return func(s *se) { s.Endpoints = eps } }

func TestServiceEntry(t *testing.T) {
	const (
		none       = networking.ServiceEntry_NONE
		dynamicDNS = networking.ServiceEntry_DYNAMIC_DNS
	)
	runCases(t, schema.ServiceEntry, baseServiceEntry, []testCase[se]{
		// Hosts and addresses.
		{name: "base is valid"},
		{name: "no hosts", mutate: func(s *se) { s.Hosts = nil },
			want: []string{"spec.hosts"}, msg: "at least one host"},
		{name: "host *", mutate: func(s *se) { s.Resolution = none; s.Hosts = []string{"*"} },
			want: []string{"spec.hosts[0]"}, msg: "not allowed"},
		{name: "invalid host", mutate: func(s *se) { s.Hosts = []string{"api_example.com"} },
			want: []string{"spec.hosts[0]"}, msg: "DNS-1123"},
		{name: "partial wildcard host", mutate: func(s *se) { s.Resolution = none; s.Hosts = []string{"*api.example.com"} },
			want: []string{"spec.hosts[0]"}, msg: "wildcard"},
		{name: "wildcard host with NONE", mutate: func(s *se) { s.Resolution = none; s.Hosts = []string{"*.example.com"} }},
		{name: "wildcard host resolved by DNS", mutate: func(s *se) { s.Hosts = []string{"*.example.com"} },
			want: []string{"spec.hosts[0]"}, msg: "cannot be wildcards"},
		{name: "wildcard host with DNS endpoints", mutate: func(s *se) {
			s.Hosts = []string{"*.example.com"}
			s.Endpoints = []*endpoint{{Address: "egress.example.com"}}
		}},
		{name: "addresses", mutate: func(s *se) {
			s.Resolution = none
			s.Addresses = []string{"10.0.0.1", "192.168.0.0/16", "2001:db8::/32"}
		}},
		{name: "IP address with DNS", mutate: func(s *se) { s.Addresses = []string{"240.0.0.1"} }},
		{name: "invalid address", mutate: func(s *se) { s.Addresses = []string{"10.0.0.256"} },
			want: []string{"spec.addresses[0]"}, msg: "not a valid IP"},
		{name: "invalid CIDR", mutate: func(s *se) { s.Resolution = none; s.Addresses = []string{"10.0.0.0/40"} },
			want: []string{"spec.addresses[0]"}, msg: "CIDR"},
		{name: "CIDR with DNS", mutate: func(s *se) { s.Addresses = []string{"10.0.0.0/8"} },
			want: []string{"spec.addresses[0]"}, msg: "only allowed with NONE or STATIC"},

		// Ports.
		{name: "no ports", mutate: func(s *se) { s.Ports = nil },
			want: []string{"spec.ports"}, msg: "at least one port"},
		{name: "null port", mutate: func(s *se) { s.Ports[0] = nil },
			want: []string{"spec.ports[0]"}, msg: "null"},
		{name: "port 0", mutate: func(s *se) { s.Ports[0].Number = 0 },
			want: []string{"spec.ports[0].number"}, msg: "1-65535"},
		{name: "duplicate port number", mutate: func(s *se) {
			s.Ports = append(s.Ports, &networking.ServicePort{Number: 443, Protocol: "TLS", Name: "tls2"})
		}, want: []string{"spec.ports[1].number"}, msg: "duplicate port number"},
		{name: "unknown protocol", mutate: func(s *se) { s.Ports[0].Protocol = "QUIC" },
			want: []string{"spec.ports[0].protocol"}, msg: "unknown protocol"},
		{name: "protocol left to detection", mutate: func(s *se) { s.Ports[0].Protocol = "" }},
		{name: "port without name", mutate: func(s *se) { s.Ports[0].Name = "" },
			want: []string{"spec.ports[0].name"}, msg: "required"},
		{name: "port name not a label", mutate: func(s *se) { s.Ports[0].Name = "TLS" },
			want: []string{"spec.ports[0].name"}, msg: "DNS-1123 label"},
		{name: "duplicate port name", mutate: func(s *se) {
			s.Ports = append(s.Ports, &networking.ServicePort{Number: 8443, Protocol: "TLS", Name: "tls"})
		}, want: []string{"spec.ports[1].name"}, msg: "duplicate port name"},
		{name: "target port", mutate: func(s *se) { s.Ports[0].TargetPort = 8443 }},
		{name: "target port above 65535", mutate: func(s *se) { s.Ports[0].TargetPort = 70000 },
			want: []string{"spec.ports[0].targetPort"}, msg: "1-65535"},
		{name: "several hosts on a TLS port", mutate: func(s *se) { s.Hosts = []string{"a.example.com", "b.example.com"} }},
		{name: "several hosts on a TCP port", mutate: func(s *se) {
			s.Hosts = []string{"a.example.com", "b.example.com"}
			s.Ports[0].Protocol = "TCP"
		}, want: []string{"spec.ports[0].protocol"}, msg: "several hosts"},
		{name: "several hosts on a TCP port with NONE", mutate: func(s *se) {
			s.Resolution = none
			s.Hosts = []string{"a.example.com", "b.example.com"}
			s.Ports[0].Protocol = "TCP"
		}},

		// Enums.
		{name: "unknown resolution", mutate: func(s *se) { s.Resolution = 9 },
			want: []string{"spec.resolution"}, msg: "not a known value"},
		{name: "unknown location", mutate: func(s *se) { s.Location = 5 },
			want: []string{"spec.location"}, msg: "not a known value"},

		// Resolution and endpoints.
		{name: "NONE with endpoints", mutate: func(s *se) { s.Resolution = none; s.Endpoints = []*endpoint{{Address: "10.0.0.1"}} },
			want: []string{"spec.endpoints"}, msg: "resolution NONE"},
		{name: "STATIC endpoints", mutate: static(
			&endpoint{Address: "10.0.0.1", Ports: map[string]uint32{"tls": 8443}, Labels: map[string]string{"app": "api"}},
			&endpoint{Address: "2001:db8::1", Locality: "us-west/zone1", Weight: 3},
		)},
		{name: "STATIC without endpoints", mutate: static(),
			want: []string{"spec.endpoints"}, msg: "needs endpoints"},
		{name: "STATIC with a workload selector", mutate: func(s *se) {
			s.Resolution = networking.ServiceEntry_STATIC
			s.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "api"}}
		}},
		{name: "STATIC host name endpoint", mutate: static(&endpoint{Address: "backend.example.com"}),
			want: []string{"spec.endpoints[0].address"}, msg: "IP address or unix"},
		{name: "STATIC unix socket endpoint", mutate: static(&endpoint{Address: "unix:///var/run/api.sock"})},
		{name: "STATIC abstract unix socket endpoint", mutate: static(&endpoint{Address: "unix://@api"})},
		{name: "unix socket endpoint with ports", mutate: static(&endpoint{Address: "unix:///var/run/api.sock", Ports: map[string]uint32{"tls": 1}}),
			want: []string{"spec.endpoints[0].ports"}, msg: "cannot have ports"},
		{name: "relative unix socket endpoint", mutate: static(&endpoint{Address: "unix://api.sock"}),
			want: []string{"spec.endpoints[0].address"}, msg: "absolute path"},
		{name: "unix socket endpoint with two service ports", mutate: func(s *se) {
			static(&endpoint{Address: "unix:///var/run/api.sock"})(s)
			s.Ports = append(s.Ports, &networking.ServicePort{Number: 80, Protocol: "HTTP", Name: "http"})
		}, want: []string{"spec.ports"}, msg: "exactly one port"},
		{name: "endpoint port not declared", mutate: static(&endpoint{Address: "10.0.0.1", Ports: map[string]uint32{"http": 8080}}),
			want: []string{`spec.endpoints[0].ports["http"]`}, msg: "not one of the ServiceEntry's port names"},
		{name: "endpoint port 0", mutate: static(&endpoint{Address: "10.0.0.1", Ports: map[string]uint32{"tls": 0}}),
			want: []string{`spec.endpoints[0].ports["tls"]`}, msg: "1-65535"},
		{name: "endpoint bad label", mutate: static(&endpoint{Address: "10.0.0.1", Labels: map[string]string{"app": "a b"}}),
			want: []string{`spec.endpoints[0].labels["app"]`}, msg: "label value"},
		{name: "endpoint without address", mutate: static(&endpoint{}),
			want: []string{"spec.endpoints[0].address"}, msg: "required"},
		{name: "endpoint behind a network gateway", mutate: static(&endpoint{Network: "remote"})},
		{name: "null endpoint", mutate: static(nil),
			want: []string{"spec.endpoints[0]"}, msg: "null"},
		{name: "DNS host name endpoints", mutate: dnsWith(&endpoint{Address: "backend.example.com"}, &endpoint{Address: "10.0.0.2"})},
		{name: "DNS invalid endpoint name", mutate: dnsWith(&endpoint{Address: "backend_1"}),
			want: []string{"spec.endpoints[0].address"}, msg: "host name"},
		{name: "DNS unix socket endpoint", mutate: dnsWith(&endpoint{Address: "unix:///var/run/api.sock"}),
			want: []string{"spec.endpoints[0].address"}, msg: "resolution STATIC"},
		{name: "DNS_ROUND_ROBIN with one endpoint", mutate: func(s *se) {
			s.Resolution = networking.ServiceEntry_DNS_ROUND_ROBIN
			s.Endpoints = []*endpoint{{Address: "backend.example.com"}}
		}},
		{name: "DNS_ROUND_ROBIN with two endpoints", mutate: func(s *se) {
			s.Resolution = networking.ServiceEntry_DNS_ROUND_ROBIN
			s.Endpoints = []*endpoint{{Address: "a.example.com"}, {Address: "b.example.com"}}
		}, want: []string{"spec.endpoints"}, msg: "at most one endpoint"},
		{name: "DYNAMIC_DNS", mutate: func(s *se) { s.Resolution = dynamicDNS; s.Hosts = []string{"*.example.com"} }},
		{name: "DYNAMIC_DNS without a wildcard", mutate: func(s *se) { s.Resolution = dynamicDNS },
			want: []string{"spec.hosts[0]"}, msg: "wildcard hosts"},
		{name: "DYNAMIC_DNS with endpoints", mutate: func(s *se) {
			s.Resolution = dynamicDNS
			s.Hosts = []string{"*.example.com"}
			s.Endpoints = []*endpoint{{Address: "10.0.0.1"}}
		}, want: []string{"spec.endpoints"}, msg: "DYNAMIC_DNS"},
		{name: "workload selector and endpoints", mutate: func(s *se) {
			static(&endpoint{Address: "10.0.0.1"})(s)
			s.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "api"}}
		}, want: []string{"spec.workloadSelector"}, msg: "mutually exclusive"},
		{name: "workload selector wildcard", mutate: func(s *se) {
			s.Resolution = networking.ServiceEntry_STATIC
			s.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "*"}}
		}, want: []string{`spec.workloadSelector.labels["app"]`}, msg: "wildcard"},

		// Visibility.
		{name: "exportTo no one", mutate: func(s *se) { s.ExportTo = []string{"~"} }},
		{name: "exportTo no one and someone", mutate: func(s *se) { s.ExportTo = []string{"~", "prod"} },
			want: []string{"spec.exportTo"}, msg: "cannot be combined"},
	})
}
