package security

import (
	"net/url"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
)

func TestSPIFFEIdentity(t *testing.T) {
	for _, tc := range []struct {
		uri, ns, sa, td string
	}{
		{"spiffe://cluster.local/ns/tenant/sa/gateway", "tenant", "gateway", "cluster.local"},
		{"spiffe://example.org/ns/istio-system/sa/istio-ingressgateway-service-account", "istio-system", "istio-ingressgateway-service-account", "example.org"},
		{"spiffe://cluster.local/ns/tenant", "", "", ""},
		{"spiffe://cluster.local/ns//sa/x", "", "", ""},
		{"spiffe:///ns/a/sa/b", "", "", ""},
		{"https://cluster.local/ns/a/sa/b", "", "", ""},
		{"spiffe://cluster.local/ns/a/sa/b/extra", "", "", ""},
		{"spiffe://cluster.local/sa/b/ns/a", "", "", ""},
	} {
		u, err := url.Parse(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		id, err := spiffeIdentity(u)
		if tc.ns == "" {
			if err == nil {
				t.Errorf("%s: accepted as %+v", tc.uri, id)
			}
			continue
		}
		if err != nil || id.Namespace != tc.ns || id.ServiceAccount != tc.sa || id.TrustDomain != tc.td || id.Method != "certificate" {
			t.Errorf("%s: %+v, %v", tc.uri, id, err)
		}
	}
}

func TestCertificateIdentity(t *testing.T) {
	ca := certs.NewCA(t, "test")
	one := ca.Client(t, certs.SPIFFE("cluster.local", "tenant", "gw"))
	id, err := certificateIdentity(one.Pair.Leaf)
	if err != nil || id.Namespace != "tenant" || id.ServiceAccount != "gw" {
		t.Errorf("one spiffe SAN: %+v, %v", id, err)
	}
	two := ca.Client(t, certs.SPIFFE("cluster.local", "a", "x"), certs.SPIFFE("cluster.local", "b", "y"))
	if _, err := certificateIdentity(two.Pair.Leaf); err == nil {
		t.Error("two spiffe SANs accepted: which namespace would it be?")
	}
	none := ca.Client(t, "https://example.com/")
	if _, err := certificateIdentity(none.Pair.Leaf); err == nil {
		t.Error("no spiffe SAN accepted")
	}
}

func TestServiceAccountIdentity(t *testing.T) {
	if id, err := serviceAccountIdentity("system:serviceaccount:ns:sa"); err != nil || id.Namespace != "ns" || id.ServiceAccount != "sa" {
		t.Errorf("%+v, %v", id, err)
	}
	for _, u := range []string{"alice", "system:serviceaccount:ns", "system:serviceaccount::sa", "system:node:n1", "system:serviceaccount:ns:sa:x"} {
		if id, err := serviceAccountIdentity(u); err == nil {
			t.Errorf("%q accepted as %+v", u, id)
		}
	}
}
