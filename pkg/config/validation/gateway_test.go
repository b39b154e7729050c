package validation_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func baseGateway() *networking.Gateway {
	return &networking.Gateway{
		Selector: map[string]string{"istio": "ingressgateway"},
		Servers: []*networking.Server{
			{
				Port:  &networking.Port{Number: 80, Protocol: "HTTP", Name: "http"},
				Hosts: []string{"example.com"},
			},
			{
				Port:  &networking.Port{Number: 443, Protocol: "HTTPS", Name: "https"},
				Hosts: []string{"*/example.com"},
				Tls:   &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "example-cert"},
			},
		},
	}
}

type gw = networking.Gateway

// tlsOf returns the HTTPS server's TLS settings of the base gateway.
func tlsOf(g *gw) *networking.ServerTLSSettings { return g.Servers[1].Tls }

func TestGateway(t *testing.T) {
	const (
		mutual   = networking.ServerTLSSettings_MUTUAL
		istioMTL = networking.ServerTLSSettings_ISTIO_MUTUAL
	)
	runCases(t, schema.Gateway, baseGateway, []testCase[gw]{
		// Servers and ports.
		{name: "base is valid"},
		{name: "no servers", mutate: func(g *gw) { g.Servers = nil },
			want: []string{"spec.servers"}, msg: "at least one server"},
		{name: "null server", mutate: func(g *gw) { g.Servers[1] = nil },
			want: []string{"spec.servers[1]"}, msg: "null"},
		{name: "missing port", mutate: func(g *gw) { g.Servers[0].Port = nil },
			want: []string{"spec.servers[0].port"}, msg: "port is required"},
		{name: "port 0", mutate: func(g *gw) { g.Servers[0].Port.Number = 0 },
			want: []string{"spec.servers[0].port.number"}, msg: "1-65535"},
		{name: "port above 65535", mutate: func(g *gw) { g.Servers[0].Port.Number = 65536 },
			want: []string{"spec.servers[0].port.number"}, msg: "1-65535"},
		{name: "port 65535", mutate: func(g *gw) { g.Servers[0].Port.Number = 65535 }},
		{name: "missing protocol", mutate: func(g *gw) { g.Servers[0].Port.Protocol = "" },
			want: []string{"spec.servers[0].port.protocol"}, msg: "protocol is required"},
		{name: "unknown protocol", mutate: func(g *gw) { g.Servers[0].Port.Protocol = "SPDY" },
			want: []string{"spec.servers[0].port.protocol"}, msg: `unknown protocol "SPDY"`},
		{name: "protocol is case-insensitive", mutate: func(g *gw) { g.Servers[0].Port.Protocol = "http2" }},
		{name: "TCP server", mutate: func(g *gw) { g.Servers[0].Port.Protocol = "TCP" }},
		{name: "missing port name", mutate: func(g *gw) { g.Servers[0].Port.Name = "" },
			want: []string{"spec.servers[0].port.name"}, msg: "port name is required"},
		{name: "duplicate port name", mutate: func(g *gw) { g.Servers[1].Port.Name = "http" },
			want: []string{"spec.servers[1].port.name"}, msg: "duplicate port name"},
		{name: "targetPort set", mutate: func(g *gw) { g.Servers[0].Port.TargetPort = 8080 },
			want: []string{"spec.servers[0].port.targetPort"}, msg: "no effect"},
		{name: "distinct server names", mutate: func(g *gw) { g.Servers[0].Name = "a"; g.Servers[1].Name = "b" }},
		{name: "duplicate server name", mutate: func(g *gw) { g.Servers[0].Name = "web"; g.Servers[1].Name = "web" },
			want: []string{"spec.servers[1].name"}, msg: "duplicate server name"},

		// Bind addresses.
		{name: "bind to an IP", mutate: func(g *gw) { g.Servers[0].Bind = "127.0.0.1" }},
		{name: "bind to a unix socket", mutate: func(g *gw) {
			g.Servers[0].Bind = "unix:///var/run/gw.sock"
			g.Servers[0].Port.Number = 0
		}},
		{name: "bind to an abstract socket", mutate: func(g *gw) { g.Servers[0].Bind = "unix://@gw"; g.Servers[0].Port.Number = 0 }},
		{name: "bind to a host name", mutate: func(g *gw) { g.Servers[0].Bind = "localhost" },
			want: []string{"spec.servers[0].bind"}, msg: "IP address"},
		{name: "unix socket with a port", mutate: func(g *gw) { g.Servers[0].Bind = "unix:///var/run/gw.sock" },
			want: []string{"spec.servers[0].port.number"}, msg: "must be 0"},
		{name: "relative unix socket", mutate: func(g *gw) { g.Servers[0].Bind = "unix://run/gw.sock"; g.Servers[0].Port.Number = 0 },
			want: []string{"spec.servers[0].bind"}, msg: "absolute path"},

		// Hosts.
		{name: "host *", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"*"} }},
		{name: "wildcard host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"*.example.com"} }},
		{name: "namespaced hosts", mutate: func(g *gw) {
			g.Servers[0].Hosts = []string{"prod/example.com", "./a.example.com", "*/*.example.com", "*/*"}
		}},
		{name: "IP host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"10.0.0.1", "2001:db8::1"} }},
		{name: "no hosts", mutate: func(g *gw) { g.Servers[0].Hosts = nil },
			want: []string{"spec.servers[0].hosts"}, msg: "at least one host"},
		{name: "short host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"reviews"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "short names"},
		{name: "partial wildcard host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"*foo.example.com"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "wildcard"},
		{name: "inner wildcard host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"foo.*.com"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "wildcard"},
		{name: "upper-case host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"Example.com"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "lower-case"},
		{name: "numeric top-level label", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"example.123"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "all digits"},
		{name: "empty namespace in host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"/example.com"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "namespace"},
		{name: "invalid namespace in host", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"My_NS/example.com"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "namespace"},
		{name: "empty name after namespace", mutate: func(g *gw) { g.Servers[0].Hosts = []string{"prod/"} },
			want: []string{"spec.servers[0].hosts[0]"}, msg: "host name must not be empty"},

		// Selector.
		{name: "no selector", mutate: func(g *gw) { g.Selector = nil }},
		{name: "selector key with a space", mutate: func(g *gw) { g.Selector = map[string]string{"bad key": "x"} },
			want: []string{`spec.selector["bad key"]`}, msg: "label key"},
		{name: "selector bad value", mutate: func(g *gw) { g.Selector = map[string]string{"app": "-x"} },
			want: []string{`spec.selector["app"]`}, msg: "label value"},
		{name: "selector wildcard", mutate: func(g *gw) { g.Selector = map[string]string{"app": "*"} },
			want: []string{`spec.selector["app"]`}, msg: "wildcard"},

		// TLS against protocol.
		{name: "HTTPS without tls", mutate: func(g *gw) { g.Servers[1].Tls = nil },
			want: []string{"spec.servers[1].tls"}, msg: "tls settings are required"},
		{name: "TLS passthrough server", mutate: func(g *gw) {
			g.Servers[1].Port.Protocol = "TLS"
			g.Servers[1].Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}
		}},
		{name: "HTTP with httpsRedirect", mutate: func(g *gw) {
			g.Servers[0].Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
		}},
		{name: "HTTP with a certificate", mutate: func(g *gw) {
			g.Servers[0].Tls = &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "c"}
		}, want: []string{"spec.servers[0].tls"}, msg: "may only set tls.httpsRedirect"},
		{name: "TCP with tls", mutate: func(g *gw) {
			g.Servers[0].Port.Protocol = "TCP"
			g.Servers[0].Tls = &networking.ServerTLSSettings{HttpsRedirect: true}
		}, want: []string{"spec.servers[0].tls"}, msg: "only allowed on HTTPS and TLS"},

		// TLS modes.
		{name: "SIMPLE with files", mutate: func(g *gw) {
			*tlsOf(g) = networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE,
				ServerCertificate: "/etc/certs/tls.crt", PrivateKey: "/etc/certs/tls.key"}
		}},
		{name: "SIMPLE without certificates", mutate: func(g *gw) { tlsOf(g).CredentialName = "" },
			want: []string{"spec.servers[1].tls"}, msg: "needs a credentialName"},
		{name: "SIMPLE certificate without key", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).ServerCertificate = "/etc/certs/tls.crt"
		}, want: []string{"spec.servers[1].tls.privateKey"}, msg: "privateKey"},
		{name: "SIMPLE key without certificate", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).PrivateKey = "/etc/certs/tls.key"
		}, want: []string{"spec.servers[1].tls.serverCertificate"}, msg: "serverCertificate"},
		{name: "MUTUAL with credential", mutate: func(g *gw) { tlsOf(g).Mode = mutual }},
		{name: "MUTUAL with client checks", mutate: func(g *gw) {
			tlsOf(g).Mode = mutual
			tlsOf(g).SubjectAltNames = []string{"client.example.com"}
			tlsOf(g).VerifyCertificateSpki = []string{"PuvIqUppKu+IGTy9YyQF6KFGHiwYMOKu2BMPntWVnyU="}
			tlsOf(g).VerifyCertificateHash = []string{"7f:fd:cf:2a:d9:6a:38:7f:69:65:19:c4:01:ca:60:e4:d7:fd:cc:10:2f:a9:16:ba:1f:e5:cf:cc:ac:8d:84:67"}
		}},
		{name: "bad SPKI pin", mutate: func(g *gw) {
			tlsOf(g).VerifyCertificateSpki = []string{"PuvIqUppKu+IGTy9YyQF6KFGHiwYMOKu2BMPntWVnyU=", "abc"}
		},
			want: []string{"spec.servers[1].tls.verifyCertificateSpki[1]"}, msg: "base64-encoded SHA-256"},
		{name: "bad certificate hash", mutate: func(g *gw) { tlsOf(g).VerifyCertificateHash = []string{"7ffd"} },
			want: []string{"spec.servers[1].tls.verifyCertificateHash[0]"}, msg: "hex-encoded SHA-256"},
		{name: "empty subject alt name", mutate: func(g *gw) { tlsOf(g).SubjectAltNames = []string{""} },
			want: []string{"spec.servers[1].tls.subjectAltNames[0]"}, msg: "must not be empty"},
		{name: "PASSTHROUGH TLS server", mutate: func(g *gw) {
			g.Servers[1].Port.Protocol = "TLS"
			*tlsOf(g) = networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_PASSTHROUGH}
		}},
		{name: "MUTUAL with files", mutate: func(g *gw) {
			*tlsOf(g) = networking.ServerTLSSettings{Mode: mutual, ServerCertificate: "/c", PrivateKey: "/k", CaCertificates: "/ca"}
		}},
		{name: "MUTUAL without client CA", mutate: func(g *gw) {
			*tlsOf(g) = networking.ServerTLSSettings{Mode: mutual, ServerCertificate: "/c", PrivateKey: "/k"}
		}, want: []string{"spec.servers[1].tls.caCertificates"}, msg: "caCertificates"},
		{name: "OPTIONAL_MUTUAL without anything", mutate: func(g *gw) {
			*tlsOf(g) = networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_OPTIONAL_MUTUAL}
		}, want: []string{"spec.servers[1].tls", "spec.servers[1].tls.caCertificates"}, msg: "OPTIONAL_MUTUAL mode needs"},
		{name: "ISTIO_MUTUAL", mutate: func(g *gw) { *tlsOf(g) = networking.ServerTLSSettings{Mode: istioMTL} }},
		{name: "ISTIO_MUTUAL with a credential", mutate: func(g *gw) { tlsOf(g).Mode = istioMTL },
			want: []string{"spec.servers[1].tls.credentialName"}, msg: "ISTIO_MUTUAL"},
		{name: "unknown mode", mutate: func(g *gw) { tlsOf(g).Mode = 42 },
			want: []string{"spec.servers[1].tls.mode"}, msg: "not a known value"},
		{name: "two credential names", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).CredentialNames = []string{"rsa", "ecdsa"}
		}},
		{name: "three credential names", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).CredentialNames = []string{"a", "b", "c"}
		}, want: []string{"spec.servers[1].tls.credentialNames"}, msg: "at most 2"},
		{name: "empty credential name", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).CredentialNames = []string{"a", ""}
		}, want: []string{"spec.servers[1].tls.credentialNames[1]"}, msg: "must not be empty"},
		{name: "credentialName and credentialNames", mutate: func(g *gw) { tlsOf(g).CredentialNames = []string{"other"} },
			want: []string{"spec.servers[1].tls"}, msg: "only one of"},
		{name: "tlsCertificates", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).TlsCertificates = []*networking.ServerTLSSettings_TLSCertificate{{ServerCertificate: "/c", PrivateKey: "/k"}}
		}},
		{name: "tlsCertificates without key", mutate: func(g *gw) {
			tlsOf(g).CredentialName = ""
			tlsOf(g).TlsCertificates = []*networking.ServerTLSSettings_TLSCertificate{{ServerCertificate: "/c"}}
		}, want: []string{"spec.servers[1].tls.tlsCertificates[0]"}, msg: "privateKey"},
		{name: "caCrl with SIMPLE", mutate: func(g *gw) { tlsOf(g).CaCrl = "/crl.pem" },
			want: []string{"spec.servers[1].tls.caCrl"}, msg: "SIMPLE"},
		{name: "caCrl with MUTUAL credential", mutate: func(g *gw) { tlsOf(g).Mode = mutual; tlsOf(g).CaCrl = "/crl.pem" },
			want: []string{"spec.servers[1].tls.caCrl"}, msg: "credentialName"},
		{name: "caCrl with MUTUAL files", mutate: func(g *gw) {
			*tlsOf(g) = networking.ServerTLSSettings{Mode: mutual, ServerCertificate: "/c", PrivateKey: "/k",
				CaCertificates: "/ca", CaCrl: "/crl"}
		}},
		{name: "protocol versions in order", mutate: func(g *gw) {
			tlsOf(g).MinProtocolVersion = networking.ServerTLSSettings_TLSV1_2
			tlsOf(g).MaxProtocolVersion = networking.ServerTLSSettings_TLSV1_3
		}},
		{name: "max version below min", mutate: func(g *gw) {
			tlsOf(g).MinProtocolVersion = networking.ServerTLSSettings_TLSV1_3
			tlsOf(g).MaxProtocolVersion = networking.ServerTLSSettings_TLSV1_2
		}, want: []string{"spec.servers[1].tls.maxProtocolVersion"}, msg: "below"},
		{name: "unknown protocol version", mutate: func(g *gw) { tlsOf(g).MinProtocolVersion = 9 },
			want: []string{"spec.servers[1].tls.minProtocolVersion"}, msg: "not a known value"},
		{name: "insecureSkipVerify is allowed", mutate: func(g *gw) { tlsOf(g).InsecureSkipVerify = wrapperspb.Bool(true) }},
	})
}
