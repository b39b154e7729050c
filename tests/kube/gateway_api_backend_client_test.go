package kube

import (
	"os"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// clientCertOf is the SDS name of the client certificate cluster c
// presents: "" for none (or no TLS), "-" for no cluster.
func clientCertOf(t *testing.T, c *clusterv3.Cluster) string {
	t.Helper()
	if c == nil {
		return "-"
	}
	if c.GetTransportSocket() == nil {
		return ""
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
		return s.GetName()
	}
	return ""
}

// Gateway spec.tls.backend.clientCertificateRef against a real API server
// (GEP-3155): without its Secret the Gateway is ResolvedRefs False,
// InvalidClientCertificateRef (still Accepted) and its backends are
// reached without a certificate; with it, ResolvedRefs True, and the
// Gateway's proxies present it on the cluster a BackendTLSPolicy sets TLS
// for, and are sent the Secret. A second Gateway of the namespace routing
// to the same Service presents nothing, and its proxies asking for the
// Secret by name get nothing.
func TestGatewayAPIBackendClientCertificate(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwbclient")
	ns := e.ns
	api := gwc.GatewayV1()
	ca, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	_, err = e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-ca"},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{})
	e.must(err)
	for _, name := range []string{"edge", "other"} {
		g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
				{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
			}}}
		if name == "edge" {
			g.Spec.TLS = &gw.GatewayTLSConfig{Backend: &gw.GatewayBackendTLS{ClientCertificateRef: &gw.SecretObjectReference{Name: "client"}}}
		}
		_, err = api.Gateways(ns).Create(ctx, g, metav1.CreateOptions{})
		e.must(err)
	}
	port := gw.PortNumber(80)
	_, err = api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}, {Name: "other"}}},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}}}},
		},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = api.BackendTLSPolicies(ns).Create(ctx, &gw.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: gw.BackendTLSPolicySpec{
			TargetRefs: []gw.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gw.LocalPolicyTargetReference{
				Group: "", Kind: "Service", Name: "web"}}},
			Validation: gw.BackendTLSPolicyValidation{Hostname: "web.example.com",
				CACertificateRefs: []gw.LocalObjectReference{{Group: "", Kind: "ConfigMap", Name: "web-ca"}}},
		}}, metav1.CreateOptions{})
	e.must(err)

	node := func(gateway string) adsc.NodeOptions {
		return adsc.NodeOptions{IP: "127.0.0.1", PodName: gateway + "-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: gateway}}
	}
	edgeSA, otherSA := "edge-"+className, "other-"+className
	edge, other := e.gatewayAs(node("edge"), edgeSA, ns), e.gatewayAs(node("other"), otherSA, ns)
	cluster := e.cluster("web")
	const resource = "kubernetes-gateway://"

	// No Secret yet: reported on the Gateway, nothing presented.
	gatewayCondition(t, gwc, ns, "edge", "", "ResolvedRefs", metav1.ConditionFalse, "InvalidClientCertificateRef", "does not exist")
	gatewayCondition(t, gwc, ns, "edge", "", "Accepted", metav1.ConditionTrue, "Accepted", "")
	gatewayCondition(t, gwc, ns, "other", "", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", "")
	s := waitFor(t, edge, "the web cluster with TLS", func(s adsc.State) bool { return s.Clusters[cluster].GetTransportSocket() != nil })
	if got := clientCertOf(t, s.Clusters[cluster]); got != "" {
		t.Errorf("without its Secret edge presents %q", got)
	}

	// The Secret created: presented by edge's proxies, and sent to them.
	_, err = e.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: ca, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	gatewayCondition(t, gwc, ns, "edge", "", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", "")
	want := resource + ns + "/client"
	waitFor(t, edge, "edge's web cluster presenting "+want, func(s adsc.State) bool { return clientCertOf(t, s.Clusters[cluster]) == want })
	poll.Until(t, "the client certificate sent to edge's proxy", func() bool {
		return slices.Equal(e.fetchSecrets(node("edge"), ns, edgeSA, want), []string{want})
	}, apiPoll...)

	// The other Gateway's proxies: the same backend, TLS, no certificate.
	s = waitFor(t, other, "other's web cluster with TLS", func(s adsc.State) bool { return s.Clusters[cluster].GetTransportSocket() != nil })
	if got := clientCertOf(t, s.Clusters[cluster]); got != "" {
		t.Errorf("other's proxies present %q; only edge's may", got)
	}
	if got := e.fetchSecrets(node("other"), ns, otherSA, want); len(got) != 0 {
		t.Errorf("other's proxy asking by name got %v", got)
	}
}
