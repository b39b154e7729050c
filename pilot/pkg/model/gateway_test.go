package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func TestMergeGateways(t *testing.T) {
	store := parseStore(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: a, namespace: ns}
spec:
  servers:
  - {port: {number: 8080, name: http2, protocol: HTTP2}, hosts: ["*"]}
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["a.com"]}
  - {port: {number: 443, name: https, protocol: HTTPS}, hosts: ["ns/A.com", "*.b.com"], tls: {mode: SIMPLE, credentialName: a}}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: b, namespace: ns}
spec:
  servers:
  - {port: {number: 80, name: http, protocol: HTTP}, hosts: ["b.com"]}
  - {port: {number: 443, name: https-files, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, serverCertificate: /c.pem, privateKey: /k.pem}}
  - {port: {number: 31400, name: tcp, protocol: TCP}, hosts: ["*"]}
`)
	mg := MergeGateways(store.List(schema.Gateway, ""))
	if !slices.Equal(mg.HTTPPorts, []uint32{80, 8080}) {
		t.Errorf("ports %v", mg.HTTPPorts)
	}
	if s := mg.HTTPServers[80]; len(s) != 2 || s[0].Gateway.Name != "a" || s[0].Index != 1 || s[1].Gateway.Name != "b" {
		t.Errorf("port 80 servers in gateway order: %+v", s)
	}
	if !slices.Equal(mg.HTTPSPorts, []uint32{443}) || len(mg.HTTPSServers[443]) != 2 {
		t.Fatalf("HTTPS ports %v servers %+v", mg.HTTPSPorts, mg.HTTPSServers)
	}
	a, b := mg.HTTPSServers[443][0], mg.HTTPSServers[443][1]
	if a.RouteName != "https.443.https.a.ns" || !slices.Equal(a.ServerNames, []string{"*.b.com", "a.com"}) ||
		a.Credential != (Credential{ResourceName: "kubernetes://a", Name: "a"}) {
		t.Errorf("credential server %+v", a)
	}
	if b.RouteName != "https.443.https-files.b.ns" || len(b.ServerNames) != 0 || !b.Credential.IsZero() {
		t.Errorf("file server (host * matches any SNI) %+v", b)
	}
	if len(mg.Errors) != 0 {
		t.Errorf("errors %v", mg.Errors)
	}
	if !slices.Equal(mg.TCPPorts, []uint32{31400}) || mg.TCPServers[31400].Gateway.Name != "b" {
		t.Errorf("TCP ports %v servers %+v", mg.TCPPorts, mg.TCPServers)
	}
	if ListenerName(80) != "0.0.0.0_80" || RouteName(80) != "http.80" {
		t.Error("Istio names")
	}
}

// Every server that cannot be served is reported at the field at fault
// and skipped; the others on the same port still are.
func TestMergeGatewaysRejects(t *testing.T) {
	cases := []struct {
		name    string
		servers string
		field   string
		message string
		https   int // HTTPS servers kept
	}{
		{"no tls", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"]}]`,
			"spec.servers[0].tls", "tls settings are required", 0},
		{"istio mutual", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: ISTIO_MUTUAL}}]`,
			"spec.servers[0].tls.mode", "tls mode ISTIO_MUTUAL is not served", 0},
		{"mutual files without CA", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: MUTUAL, serverCertificate: /c.pem, privateKey: /k.pem}}]`,
			"spec.servers[0].tls.caCertificates", "needs caCertificates", 0},
		{"caCertCredentialName", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: MUTUAL, credentialName: c, caCertCredentialName: ca}}]`,
			"spec.servers[0].tls.caCertCredentialName", "caCertCredentialName is not served yet", 0},
		{"second TCP server", `[{port: {number: 9000, name: a, protocol: TCP}, hosts: ["*"]}, {port: {number: 9000, name: b, protocol: TCP}, hosts: ["*"]}]`,
			"spec.servers[1].port", "only one TCP server may use a port", 0},
		{"TCP on an HTTPS port", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: t, protocol: TCP}, hosts: ["*"]}]`,
			"spec.servers[1].port.protocol", "port 443 already serves TLS", 1},
		{"passthrough host taken", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: t, protocol: TLS}, hosts: [a.com, b.com], tls: {mode: PASSTHROUGH}}]`,
			"spec.servers[1].hosts", "host a.com on port 443 is already served by Gateway ns/gw spec.servers[0]", 1},
		{"no certificate", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, serverCertificate: /c.pem}}]`,
			"spec.servers[0].tls", "needs credentialName, or serverCertificate and privateKey", 0},
		{"workload certificate", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: "builtin://"}}]`,
			"spec.servers[0].tls.credentialName", "is not served", 0},
		{"credentialNames", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialNames: [a, b]}}]`,
			"spec.servers[0].tls", "credentialNames and tlsCertificates are not served yet", 0},
		{"HTTPS on an HTTP port", `[{port: {number: 80, name: h, protocol: HTTP}, hosts: ["*"]}, {port: {number: 80, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}]`,
			"spec.servers[1].port.protocol", "already serves plain HTTP", 0},
		{"HTTP on an HTTPS port", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: h, protocol: HTTP}, hosts: ["*"]}]`,
			"spec.servers[1].port.protocol", "port 443 already serves TLS", 1},
		{"two catch-alls", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: t, protocol: HTTPS}, hosts: ["ns/*"], tls: {mode: SIMPLE, credentialName: d}}]`,
			"spec.servers[1].hosts", "host * on port 443 is already served by Gateway ns/gw spec.servers[0]", 1},
		{"same SNI", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: t, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: d}}]`,
			"spec.servers[1].hosts", "host a.com on port 443 is already served by Gateway ns/gw spec.servers[0]", 1},
		{"duplicate port name", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: s, protocol: HTTPS}, hosts: [b.com], tls: {mode: SIMPLE, credentialName: d}}]`,
			"spec.servers[1].port.name", "route configuration https.443.s.gw.ns is already used", 1},
		{"partial wildcard", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*a.com"], tls: {mode: SIMPLE, credentialName: c}}]`,
			"spec.servers[0].hosts", "a wildcard must be the whole leftmost label", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := parseStore(t, "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec:\n  servers: "+tc.servers+"\n")
			mg := MergeGateways(store.List(schema.Gateway, ""))
			var found bool
			for _, e := range mg.Errors {
				if e.Field == tc.field && strings.Contains(e.Message, tc.message) && !e.Warning {
					found = true
				}
			}
			if !found {
				t.Errorf("want error at %s containing %q, got %v", tc.field, tc.message, mg.Errors)
			}
			if got := len(mg.HTTPSServers[443]) + len(mg.HTTPSServers[80]); got != tc.https {
				t.Errorf("%d HTTPS servers kept, want %d", got, tc.https)
			}
		})
	}
}

// A name contested by two servers stays with the first; as in Istio, the
// second server is skipped whole rather than served with part of its hosts.
func TestMergeGatewaysSharedSNI(t *testing.T) {
	store := parseStore(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  servers:
  - {port: {number: 443, name: a, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: a}}
  - {port: {number: 443, name: b, protocol: HTTPS}, hosts: [a.com, b.com], tls: {mode: SIMPLE, credentialName: b}}
  - {port: {number: 443, name: c, protocol: TLS}, hosts: [c.com], tls: {mode: PASSTHROUGH}}
  - {port: {number: 443, name: d, protocol: TLS}, hosts: [d.com], tls: {mode: MUTUAL, credentialName: d}}
`)
	mg := MergeGateways(store.List(schema.Gateway, ""))
	ss := mg.HTTPSServers[443]
	if len(ss) != 1 || !slices.Equal(ss[0].ServerNames, []string{"a.com"}) {
		t.Fatalf("servers %+v", ss)
	}
	if len(mg.Errors) != 1 || mg.Errors[0].Warning || mg.Errors[0].Field != "spec.servers[1].hosts" ||
		!strings.Contains(mg.Errors[0].Message, "host a.com on port 443 is already served") {
		t.Errorf("errors %v", mg.Errors)
	}
	ts := mg.TLSServers[443]
	if !slices.Equal(mg.TLSPorts, []uint32{443}) || len(ts) != 2 || !ts[0].Passthrough || ts[1].Passthrough ||
		ts[1].Credential.Resolve("proxy-ns") != (SecretRef{Namespace: "proxy-ns", Name: "d"}) || !ts[1].Mutual() || ts[1].Credential.CAResourceName() != "kubernetes://d-cacert" {
		t.Errorf("TLS servers %+v", ts)
	}
}

func TestCAForCredential(t *testing.T) {
	secrets := map[string]map[string][]byte{
		"ns/own":          {"tls.crt": []byte("C"), "tls.key": []byte("K"), "ca.crt": []byte("CA1"), "ca.crl": []byte("CRL1")},
		"ns/split":        {"tls.crt": []byte("C"), "tls.key": []byte("K")},
		"ns/split-cacert": {"cacert": []byte("CA2")},
		"ns/none":         {"tls.crt": []byte("C"), "tls.key": []byte("K")},
	}
	store := dataStore(secrets)
	cases := []struct {
		name, ca, crl, from string
		ok                  bool
	}{
		{"own", "CA1", "CRL1", "ns/own", true},
		{"split", "CA2", "", "ns/split-cacert", true},
		{"none", "", "", "", false},
	}
	allow := func(SecretRef) string { return "" }
	for _, tc := range cases {
		ca, crl, from, refused, ok := CAForCredential(store, SecretRef{Namespace: "ns", Name: tc.name}, allow)
		if ok != tc.ok || refused != "" || string(ca) != tc.ca || string(crl) != tc.crl || (ok && from.String() != tc.from) {
			t.Errorf("%s: got %q %q %v %q %v", tc.name, ca, crl, from, refused, ok)
		}
	}
	if _, _, _, _, ok := CAForCredential(SecretStoreFunc(func(string, string) ([]byte, []byte, bool) { return nil, nil, true }), SecretRef{Name: "own"}, allow); ok {
		t.Error("a store without SecretData serves no CA")
	}
	// Every Secret the CA may be read from is checked with the scope's
	// rule before it is read: a refused NAME-cacert is passed over as if
	// absent (no CA, nothing read from it), and a refused NAME refuses
	// the CA without reading anything.
	var asked []string
	onlyCredential := func(r SecretRef) string {
		asked = append(asked, r.String())
		if r.Name == "split-cacert" {
			return "not this one"
		}
		return ""
	}
	ca, _, _, refused, ok := CAForCredential(store, SecretRef{Namespace: "ns", Name: "split"}, onlyCredential)
	if ok || ca != nil || refused != "" || !slices.Equal(asked, []string{"ns/split", "ns/split-cacert"}) {
		t.Errorf("refused CA Secret: ca %q refused %q ok %v, asked %v", ca, refused, ok, asked)
	}
	refuseAll := func(SecretRef) string { return "not yours" }
	if ca, _, from, refused, ok := CAForCredential(store, SecretRef{Namespace: "ns", Name: "own"}, refuseAll); ok || ca != nil || refused != "not yours" || from.String() != "ns/own" {
		t.Errorf("refused credential: ca %q from %v refused %q ok %v", ca, from, refused, ok)
	}
}

type dataStore map[string]map[string][]byte

func (d dataStore) Secret(ns, name string) ([]byte, []byte, bool) { return TLSKeyPair(d[ns+"/"+name]) }
func (d dataStore) SecretData(ns, name string) (map[string][]byte, bool) {
	v, ok := d[ns+"/"+name]
	return v, ok
}

func TestTLSKeyPair(t *testing.T) {
	cases := []struct {
		data map[string][]byte
		ok   bool
		cert string
	}{
		{map[string][]byte{"tls.crt": []byte("C"), "tls.key": []byte("K")}, true, "C"},
		{map[string][]byte{"cert": []byte("C2"), "key": []byte("K2")}, true, "C2"},
		{map[string][]byte{"tls.crt": []byte("C")}, false, ""},
		{map[string][]byte{"tls.crt": []byte("C"), "tls.key": {}}, false, ""},
		{nil, false, ""},
	}
	for i, tc := range cases {
		cert, _, ok := TLSKeyPair(tc.data)
		if ok != tc.ok || string(cert) != tc.cert {
			t.Errorf("case %d: got %q %v", i, cert, ok)
		}
	}
	var store SecretStore = SecretStoreFunc(func(ns, name string) ([]byte, []byte, bool) { return []byte(ns), []byte(name), true })
	if c, k, ok := store.Secret("a", "b"); string(c) != "a" || string(k) != "b" || !ok {
		t.Error("SecretStoreFunc")
	}
}
