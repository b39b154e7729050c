package kube

import (
	"fmt"
	"os"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// backendTLSPolicyCond polls until the ancestor Gateway ns/edge of policy
// name has condition typ with status and reason, written by Wayfinder for
// the policy's current generation.
func backendTLSPolicyCond(t *testing.T, gwc gwclient.Interface, ns, name, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	poll.Seen(t, fmt.Sprintf("BackendTLSPolicy %s %s %s/%s", name, typ, status, reason), func() (string, bool) {
		p, err := gwc.GatewayV1().BackendTLSPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		for _, a := range p.Status.Ancestors {
			if string(a.AncestorRef.Name) != "edge" || a.ControllerName != gatewayapi.ControllerName {
				continue
			}
			d, ok := condIs(a.Conditions, typ, status, reason)
			for _, c := range a.Conditions {
				if c.ObservedGeneration != p.Generation {
					return d + fmt.Sprintf(" (observedGeneration %d, generation %d)", c.ObservedGeneration, p.Generation), false
				}
			}
			return d, ok
		}
		return fmt.Sprintf("no ancestor edge of ours in %+v", p.Status.Ancestors), false
	}, apiPoll...)
}

// Against a real API server: a BackendTLSPolicy on a Service that an
// HTTPRoute of the Gateway reaches gives the backend's cluster TLS with
// the policy's SNI, its hostname as the SAN to verify, and the ConfigMap's
// CA; its status has the Gateway as ancestor, Accepted and ResolvedRefs.
// A second, newer policy on the same target is Conflicted. A ConfigMap
// whose ca.crt is no certificate makes the policy NoValidCACertificate /
// InvalidCACertificateRef and withdraws the cluster (requests fail, never
// go unverified); restoring it brings both back.
func TestGatewayAPIBackendTLSPolicy(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwbtls")
	ns := e.ns
	api := gwc.GatewayV1()
	ca, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	_, err = e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-ca"},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{})
	e.must(err)
	_, err = api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	port := gw.PortNumber(80)
	_, err = api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}}}},
		},
	}, metav1.CreateOptions{})
	e.must(err)
	policy := func(name, host string) *gw.BackendTLSPolicy {
		return &gw.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.BackendTLSPolicySpec{
				TargetRefs: []gw.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gw.LocalPolicyTargetReference{
					Group: "", Kind: "Service", Name: "web"}}},
				Validation: gw.BackendTLSPolicyValidation{Hostname: gw.PreciseHostname(host),
					CACertificateRefs: []gw.LocalObjectReference{{Group: "", Kind: "ConfigMap", Name: "web-ca"}}},
			}}
	}
	_, err = api.BackendTLSPolicies(ns).Create(ctx, policy("first", "web.example.com"), metav1.CreateOptions{})
	e.must(err)

	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, "edge-wayfinder", ns)
	cluster := e.cluster("web")
	s := waitFor(t, proxy, "the web cluster with TLS", func(s adsc.State) bool { return s.Clusters[cluster].GetTransportSocket() != nil })
	tls := &tlsv3.UpstreamTlsContext{}
	e.must(s.Clusters[cluster].GetTransportSocket().GetTypedConfig().UnmarshalTo(tls))
	vc := tls.GetCommonTlsContext().GetValidationContext()
	if tls.GetSni() != "web.example.com" || !strings.Contains(vc.GetTrustedCa().GetInlineString(), "BEGIN CERTIFICATE") ||
		len(vc.GetMatchTypedSubjectAltNames()) != 1 || vc.GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact() != "web.example.com" {
		t.Errorf("upstream TLS %v: want SNI and SAN web.example.com and the ConfigMap's CA", tls)
	}
	backendTLSPolicyCond(t, gwc, ns, "first", "Accepted", metav1.ConditionTrue, "Accepted")
	backendTLSPolicyCond(t, gwc, ns, "first", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")

	// A newer policy on the same target: Conflicted; the first stays
	// (older, or, created within the same second, first by name).
	_, err = api.BackendTLSPolicies(ns).Create(ctx, policy("second", "other.example.com"), metav1.CreateOptions{})
	e.must(err)
	backendTLSPolicyCond(t, gwc, ns, "second", "Accepted", metav1.ConditionFalse, "Conflicted")
	backendTLSPolicyCond(t, gwc, ns, "first", "Accepted", metav1.ConditionTrue, "Accepted")

	// A CA that is no certificate: invalid, and the cluster withdrawn.
	_, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-ca", Namespace: ns},
		Data: map[string]string{"ca.crt": "garbage"}}, metav1.UpdateOptions{})
	e.must(err)
	backendTLSPolicyCond(t, gwc, ns, "first", "Accepted", metav1.ConditionFalse, "NoValidCACertificate")
	backendTLSPolicyCond(t, gwc, ns, "first", "ResolvedRefs", metav1.ConditionFalse, "InvalidCACertificateRef")
	waitFor(t, proxy, "the web cluster withdrawn", func(s adsc.State) bool { return s.Clusters[cluster] == nil })

	_, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-ca", Namespace: ns},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.UpdateOptions{})
	e.must(err)
	backendTLSPolicyCond(t, gwc, ns, "first", "Accepted", metav1.ConditionTrue, "Accepted")
	waitFor(t, proxy, "the web cluster back with TLS", func(s adsc.State) bool { return s.Clusters[cluster].GetTransportSocket() != nil })
}
