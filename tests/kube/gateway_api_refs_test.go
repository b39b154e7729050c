package kube

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gateway"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// gatewayAPIEnv is an ingressEnv (server with a secure port and status
// leader) with a GatewayClass of Wayfinder's controller.
func gatewayAPIEnv(t *testing.T, prefix string, also ...string) (*ingressEnv, gwclient.Interface, string) {
	t.Helper()
	e := newIngressEnv(t, prefix, also...)
	for _, ns := range also {
		ensureNamespace(t, e.cluster_, ns)
	}
	gwc, err := gwclient.NewForConfig(e.cluster_.RESTConfig())
	e.must(err)
	className := e.ns + "-wayfinder"
	_, err = gwc.GatewayV1().GatewayClasses().Create(ctx, &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       gw.GatewayClassSpec{ControllerName: gateway.ControllerName},
	}, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		_ = gwc.GatewayV1().GatewayClasses().Delete(context.Background(), className, metav1.DeleteOptions{})
	})
	return e, gwc, className
}

// listenerStatus finds listener name in a Gateway's status.
func listenerStatus(g *gw.Gateway, name string) *gw.ListenerStatus {
	for i := range g.Status.Listeners {
		if string(g.Status.Listeners[i].Name) == name {
			return &g.Status.Listeners[i]
		}
	}
	return nil
}

// A certificateRef to a Secret of another namespace, with real tokens on
// the secure port: refused (listener ResolvedRefs RefNotPermitted, no
// HTTPS listener, the Secret not sent even when asked for by name) until
// a ReferenceGrant in the Secret's namespace allows the Gateways of the
// Gateway's namespace; then the listener is served and the Secret reaches
// the gateway proxy of that namespace, never a proxy of another namespace
// with the same label; once the grant is deleted, the listener and the
// Secret are withdrawn and the status flips back.
func TestGatewayAPICrossNamespaceCertificate(t *testing.T) {
	const certsNS, tenantNS = "gwcert-certs", "gwcert-tenant"
	e, gwc, className := gatewayAPIEnv(t, "gwcert", certsNS, tenantNS)
	ns := e.ns
	api := gwc.GatewayV1()
	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	secretName := ns + "-site" // certsNS is shared by reruns against one cluster
	_, err = e.kube.CoreV1().Secrets(certsNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Secrets(certsNS).Delete(context.Background(), secretName, metav1.DeleteOptions{})
	})
	certs := gw.Namespace(certsNS)
	host := gw.Hostname("secure.example.com")
	_, err = api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType, Hostname: &host, TLS: &gw.ListenerTLSConfig{
				CertificateRefs: []gw.SecretObjectReference{{Name: gw.ObjectName(secretName), Namespace: &certs}}}},
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

	const sa = "edge-wayfinder"
	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gateway.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, sa, ns)
	resource := "kubernetes-gateway://" + certsNS + "/" + secretName
	listenerResolved := func(status metav1.ConditionStatus, reason string) func() (string, bool) {
		return func() (string, bool) {
			g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			l := listenerStatus(g, "https")
			if l == nil {
				return fmt.Sprintf("no listener https in %+v", g.Status.Listeners), false
			}
			d1, ok1 := condIs(l.Conditions, "ResolvedRefs", status, reason)
			// A listener whose references do not resolve is not served.
			programmed, programmedReason := metav1.ConditionTrue, "Programmed"
			if status != metav1.ConditionTrue {
				programmed, programmedReason = metav1.ConditionFalse, "Invalid"
			}
			d2, ok2 := condIs(l.Conditions, "Programmed", programmed, programmedReason)
			return d1 + "; " + d2, ok1 && ok2
		}
	}
	secretsSent := func(want []string) func() bool {
		return func() bool { return slices.Equal(e.fetchSecrets(node, ns, sa, resource), want) }
	}

	// No grant: refused.
	eventually(t, "listener https RefNotPermitted", listenerResolved(metav1.ConditionFalse, "RefNotPermitted"))
	s := waitFor(t, proxy, "the HTTP listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_80"] != nil })
	if s.Listeners["0.0.0.0_443"] != nil {
		t.Errorf("the HTTPS listener is served without a ReferenceGrant: %s", describe(s))
	}
	if got := e.fetchSecrets(node, ns, sa, resource); len(got) != 0 {
		t.Errorf("without a ReferenceGrant the gateway asking by name got %v", got)
	}

	// Granted: served, and the Secret reaches the proxy.
	_, err = api.ReferenceGrants(certsNS).Create(ctx, &gw.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: certsNS, Name: ns + "-gateways"},
		Spec: gw.ReferenceGrantSpec{
			From: []gw.ReferenceGrantFrom{{Group: gw.GroupName, Kind: "Gateway", Namespace: gw.Namespace(ns)}},
			To:   []gw.ReferenceGrantTo{{Group: "", Kind: "Secret", Name: ptrTo(gw.ObjectName(secretName))}},
		},
	}, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		_ = api.ReferenceGrants(certsNS).Delete(context.Background(), ns+"-gateways", metav1.DeleteOptions{})
	})
	waitFor(t, proxy, "the HTTPS listener once granted", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })
	waitUntil(t, "the Secret sent to the gateway of "+ns, secretsSent([]string{resource}))
	if names, _ := e.dumpedSecrets(node); !slices.Equal(names, []string{resource}) {
		t.Errorf("config_dump shows secrets %v for the gateway, want [%s]", names, resource)
	}
	eventually(t, "listener https ResolvedRefs once granted", listenerResolved(metav1.ConditionTrue, "ResolvedRefs"))

	// A proxy of another namespace carrying the same label: nothing, not
	// even asking for the resource by name.
	tenantNode := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: tenantNS, Labels: map[string]string{gateway.GatewayNameLabel: "edge"}}
	stranger := e.gatewayAs(tenantNode, sa, tenantNS)
	s = waitFor(t, stranger, "a first listener answer", func(s adsc.State) bool { return s.Types[adsc.ListenerType].ACKs > 0 })
	if len(s.Listeners) != 0 {
		t.Errorf("a proxy of %s got listeners of %s's Gateway: %s", tenantNS, ns, describe(s))
	}
	if got := e.fetchSecrets(tenantNode, tenantNS, sa, resource); len(got) != 0 {
		t.Errorf("a proxy of %s asking by name got %v", tenantNS, got)
	}
	if names, raw := e.dumpedSecrets(tenantNode); len(names) != 0 || strings.Contains(raw, "PRIVATE KEY") {
		t.Errorf("a proxy of %s was sent secrets %v", tenantNS, names)
	}

	// Grant removed: withdrawn.
	e.must(api.ReferenceGrants(certsNS).Delete(ctx, ns+"-gateways", metav1.DeleteOptions{}))
	waitFor(t, proxy, "the HTTPS listener withdrawn with the grant", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] == nil && s.Listeners["0.0.0.0_80"] != nil
	})
	waitUntil(t, "the Secret no longer sent", secretsSent(nil))
	eventually(t, "listener https RefNotPermitted again", listenerResolved(metav1.ConditionFalse, "RefNotPermitted"))
}
