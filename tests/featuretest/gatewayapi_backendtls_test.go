package featuretest

import (
	"os"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

const backendTLSRouteYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [shop.example.com]
  rules:
  - backendRefs: [{name: reviews, port: 9080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: reviews-tls, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: reviews}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: reviews-ca}]
    hostname: reviews.example.com
`

func caConfigMapYAML(t *testing.T, ca string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: reviews-ca, namespace: default}\ndata:\n  ca.crt: |\n")
	for line := range strings.Lines(ca) {
		b.WriteString("    " + line)
	}
	return b.String()
}

// upstreamTLS is the UpstreamTlsContext of cluster name in s, or nil.
func upstreamTLS(t *testing.T, s adsc.State, name string) *tlsv3.UpstreamTlsContext {
	t.Helper()
	c := s.Clusters[name]
	if c.GetTransportSocket() == nil {
		return nil
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatalf("cluster %s: %v", name, err)
	}
	return ctx
}

// File mode serves a BackendTLSPolicy of the folder with its CA from a
// ConfigMap document of the folder: the backend's cluster originates TLS
// with the policy's SNI, verifies the hostname and trusts that CA; a CA
// that does not parse withdraws the cluster (requests fail) and is
// reported by file and object, never with its content; a fixed CA brings
// it back.
func TestGatewayAPIBackendTLSFileMode(t *testing.T) {
	ca, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, map[string]string{
		"services.yaml": servicesYAML,
		"gwapi.yaml":    gatewayAPIYAML,
		"route.yaml":    backendTLSRouteYAML,
		"ca.yaml":       caConfigMapYAML(t, string(ca)),
	})
	const cluster = "outbound|9080||reviews.default.svc.cluster.local"
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s := waitFor(t, edge, "the reviews cluster with TLS", func(s adsc.State) bool {
		return allACKed(s) && s.Clusters[cluster].GetTransportSocket() != nil
	})
	tls := upstreamTLS(t, s, cluster)
	if tls.GetSni() != "reviews.example.com" {
		t.Errorf("sni %q, want reviews.example.com", tls.GetSni())
	}
	vc := tls.GetCommonTlsContext().GetValidationContext()
	if got := vc.GetTrustedCa().GetInlineString(); !strings.Contains(got, "BEGIN CERTIFICATE") {
		t.Errorf("trusted CA %v, want the ConfigMap's certificate inline", vc.GetTrustedCa())
	}
	if sans := vc.GetMatchTypedSubjectAltNames(); len(sans) != 1 || sans[0].GetMatcher().GetExact() != "reviews.example.com" {
		t.Errorf("SAN matchers %v, want the hostname", sans)
	}
	if err := s.Clusters[cluster].ValidateAll(); err != nil {
		t.Errorf("cluster fails validation: %v", err)
	}
	// The policy's status, written nowhere in file mode, in /debug/configz.
	ps := configz(t, e).GatewayAPI.BackendTLSPolicies
	if len(ps) != 1 || len(ps[0].Status.Ancestors) != 1 || ps[0].Status.Ancestors[0].AncestorRef.Name != "edge" ||
		!hasCondition(ps[0].Status.Ancestors[0].Conditions, "Accepted", "True") || !hasCondition(ps[0].Status.Ancestors[0].Conditions, "ResolvedRefs", "True") {
		t.Errorf("BackendTLSPolicy status %+v, want the Gateway edge as ancestor, Accepted and ResolvedRefs", ps)
	}

	// A CA that is no certificate: the cluster goes (requests fail, never
	// unverified), the problem names the file and the ConfigMap.
	e.write("ca.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: reviews-ca, namespace: default}\ndata:\n  ca.crt: not-a-certificate\n")
	waitFor(t, edge, "the reviews cluster withdrawn", func(s adsc.State) bool { return allACKed(s) && s.Clusters[cluster] == nil })
	cz := configz(t, e)
	found := false
	for _, p := range cz.Errors {
		msg := p.Source + " " + p.Field + " " + p.Message
		if strings.Contains(msg, "not-a-certificate") {
			t.Errorf("a problem carries the CA's content: %s", msg)
		}
		if strings.Contains(msg, "route.yaml") && strings.Contains(msg, "ConfigMap default/reviews-ca ca.crt") {
			found = true
		}
	}
	if !found {
		t.Errorf("no problem located in route.yaml naming the ConfigMap: %+v", cz.Errors)
	}

	e.write("ca.yaml", caConfigMapYAML(t, string(ca)))
	waitFor(t, edge, "the reviews cluster back with TLS", func(s adsc.State) bool {
		return allACKed(s) && s.Clusters[cluster].GetTransportSocket() != nil
	})
}
