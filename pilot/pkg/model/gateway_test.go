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
	if len(mg.Errors) != 1 || mg.Errors[0].Field != "spec.servers[2].port.protocol" || mg.Errors[0].Key.Name != "b" {
		t.Errorf("only TCP reported as not served yet: %v", mg.Errors)
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
		{"passthrough", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: PASSTHROUGH}}]`,
			"spec.servers[0].tls.mode", "tls mode PASSTHROUGH is not served yet", 0},
		{"mutual", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: MUTUAL, credentialName: c}}]`,
			"spec.servers[0].tls.mode", "tls mode MUTUAL is not served yet", 0},
		{"no certificate", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, serverCertificate: /c.pem}}]`,
			"spec.servers[0].tls", "needs credentialName, or serverCertificate and privateKey", 0},
		{"Gateway API credential", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: "kubernetes-gateway://ns/c"}}]`,
			"spec.servers[0].tls.credentialName", "belong to the Gateway API", 0},
		{"credentialNames", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialNames: [a, b]}}]`,
			"spec.servers[0].tls", "credentialNames and tlsCertificates are not served yet", 0},
		{"HTTPS on an HTTP port", `[{port: {number: 80, name: h, protocol: HTTP}, hosts: ["*"]}, {port: {number: 80, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}]`,
			"spec.servers[1].port.protocol", "already serves plain HTTP", 0},
		{"HTTP on an HTTPS port", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: h, protocol: HTTP}, hosts: ["*"]}]`,
			"spec.servers[1].port.protocol", "already serves HTTPS", 1},
		{"two catch-alls", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: t, protocol: HTTPS}, hosts: ["ns/*"], tls: {mode: SIMPLE, credentialName: d}}]`,
			"spec.servers[1].hosts", "host * on port 443 is already served by Gateway ns/gw spec.servers[0]", 1},
		{"same SNI", `[{port: {number: 443, name: s, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: c}}, {port: {number: 443, name: t, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: d}}]`,
			"spec.servers[1].hosts", "every host on port 443 (a.com) is already served", 1},
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

// A name contested by two servers stays with the first; the second keeps
// the rest of its names, with a warning.
func TestMergeGatewaysSharedSNI(t *testing.T) {
	store := parseStore(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  servers:
  - {port: {number: 443, name: a, protocol: HTTPS}, hosts: [a.com], tls: {mode: SIMPLE, credentialName: a}}
  - {port: {number: 443, name: b, protocol: HTTPS}, hosts: [a.com, b.com], tls: {mode: SIMPLE, credentialName: b}}
`)
	mg := MergeGateways(store.List(schema.Gateway, ""))
	ss := mg.HTTPSServers[443]
	if len(ss) != 2 || !slices.Equal(ss[0].ServerNames, []string{"a.com"}) || !slices.Equal(ss[1].ServerNames, []string{"b.com"}) {
		t.Fatalf("servers %+v", ss)
	}
	if len(mg.Errors) != 1 || !mg.Errors[0].Warning || !strings.Contains(mg.Errors[0].Message, "SNI name a.com on port 443 is already served") {
		t.Errorf("errors %v", mg.Errors)
	}
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
