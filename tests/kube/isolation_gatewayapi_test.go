package kube

import (
	"os"
	"slices"
	"strings"
	"testing"

	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Gateway API isolation against a real API server. Gateway edge, in
// namespace edge-*, has an HTTPS and an HTTP listener that admit routes of
// their own namespace only (allowedRoutes Same, the default) and an HTTP
// listener on 8080 that admits namespaces labelled edge-access=edge-*.
// From namespace evil-*, a VirtualService naming the generated Gateways
// (edge-https-gwapi, edge-http-gwapi: predictable names) and an Istio
// Gateway selecting edge's proxies by their label: the edge proxy gets
// neither the evil host nor the evil port, and their status says why.
// A VirtualService of edge-* naming the same Gateways, and one of the
// labelled namespace friend-* naming the 8080 listener's, are served.
func TestGatewayAPIIsolationAgainstAPIServer(t *testing.T) {
	c, edgeNS := newCluster(t, "edge")
	evilNS, friendNS := c.Namespace(t, "evil"), c.Namespace(t, "friend")
	cs := c.Clientset()
	ic, err := istioclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	gwc := gatewayAPIClass(t, c, edgeNS+"-wayfinder")
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// friend-* is admitted by the 8080 listener's selector; the value is
	// this run's, as namespaces of other runs share the cluster.
	friend, err := cs.CoreV1().Namespaces().Get(ctx, friendNS, metav1.GetOptions{})
	must(friend, err)
	if friend.Labels == nil {
		friend.Labels = map[string]string{}
	}
	friend.Labels["edge-access"] = edgeNS
	must(cs.CoreV1().Namespaces().Update(ctx, friend, metav1.UpdateOptions{}))

	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	must(nil, err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	must(nil, err)
	must(cs.CoreV1().Secrets(edgeNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "edge-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{}))
	for _, ns := range []string{edgeNS, evilNS, friendNS} {
		must(cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}, metav1.CreateOptions{}))
	}
	host := gw.Hostname("*.example.com")
	selector := gw.NamespacesFromSelector
	must(gwc.GatewayV1().Gateways(edgeNS).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: edgeNS, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(edgeNS + "-wayfinder"), Listeners: []gw.Listener{
			{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType, Hostname: &host,
				TLS: &gw.ListenerTLSConfig{CertificateRefs: []gw.SecretObjectReference{{Name: "edge-tls"}}}},
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, Hostname: &host},
			{Name: "shared", Port: 8080, Protocol: gw.HTTPProtocolType, AllowedRoutes: &gw.AllowedRoutes{Namespaces: &gw.RouteNamespaces{
				From: &selector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"edge-access": edgeNS}}}}},
		}},
	}, metav1.CreateOptions{}))

	vs := func(ns, name, host string, gateways ...string) {
		t.Helper()
		must(ic.NetworkingV1().VirtualServices(ns).Create(ctx, &networkingv1.VirtualService{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networking.VirtualService{Hosts: []string{host}, Gateways: gateways, Http: []*networking.HTTPRoute{{
				Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{
					Host: "web." + ns + ".svc.cluster.local", Port: &networking.PortSelector{Number: 8080}}}},
			}}},
		}, metav1.CreateOptions{}))
	}
	// The attacks, created first: by the time the allowed objects are
	// served, these have been through the same pushes.
	vs(evilNS, "steal", "steal.example.com", edgeNS+"/edge-https-gwapi", edgeNS+"/edge-http-gwapi")
	must(ic.NetworkingV1().Gateways(evilNS).Create(ctx, &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: evilNS, Name: "takeover"},
		Spec: networking.Gateway{Selector: map[string]string{gatewayapi.GatewayNameLabel: "edge"}, Servers: []*networking.Server{{
			Port: &networking.Port{Number: 9000, Name: "http-takeover", Protocol: "HTTP"}, Hosts: []string{"*/*"}}}},
	}, metav1.CreateOptions{}))
	vs(evilNS, "takeover", "takeover.example.com", "takeover")
	// What the listeners allow.
	vs(edgeNS, "own", "own.example.com", "edge-https-gwapi", "edge-http-gwapi")
	vs(friendNS, "tenant", "tenant.example.com", edgeNS+"/edge-shared-gwapi")

	server := startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{edgeNS, evilNS, friendNS},
		PodName: "wayfinder-0", PodNamespace: edgeNS})
	proxy := gatewayProxy(t, server.GRPCAddr().String(), edgeNS, "edge-1", "edge")
	hasHost := func(rc string, s adsc.State, h string) bool {
		for _, vh := range s.Routes[rc].GetVirtualHosts() {
			if slices.Contains(vh.GetDomains(), h) {
				return true
			}
		}
		return false
	}
	// The proxy is on the plaintext port, which is sent no key material, so
	// the HTTPS listener's filter chain is left out; its Gateway is refused
	// to evil-* all the same (spec.gateways[0] below).
	s := waitFor(t, proxy, "own.example.com on 80, tenant.example.com on 8080", func(s adsc.State) bool {
		return hasHost("http.80", s, "own.example.com") && hasHost("http.8080", s, "tenant.example.com")
	})
	for name := range s.Routes {
		for _, h := range []string{"steal.example.com", "takeover.example.com"} {
			if hasHost(name, s, h) {
				t.Errorf("route configuration %s serves %s from namespace %s", name, h, evilNS)
			}
		}
	}
	if _, ok := s.Listeners["0.0.0.0_9000"]; ok {
		t.Errorf("the edge proxy got the port of Gateway %s/takeover: %s", evilNS, describe(s))
	}

	// The status of the refused objects says why.
	valid := func(s *metav1alpha1.IstioStatus) string {
		for _, c := range s.GetConditions() {
			if c.GetType() == status.ConditionValid {
				return c.GetStatus() + "/" + c.GetReason() + ": " + c.GetMessage()
			}
		}
		return ""
	}
	poll.Seen(t, "VirtualService "+evilNS+"/steal Valid False, naming the listener and namespace", func() (string, bool) {
		v, err := ic.NetworkingV1().VirtualServices(evilNS).Get(ctx, "steal", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		got := valid(&v.Status)
		return got, strings.HasPrefix(got, "False/Invalid") && strings.Contains(got, "spec.gateways[0]") && strings.Contains(got, "spec.gateways[1]") &&
			strings.Contains(got, "Gateway API Gateway "+edgeNS+"/edge") && strings.Contains(got, "do not admit namespace "+evilNS)
	}, apiPoll...)
	poll.Seen(t, "Gateway "+evilNS+"/takeover Valid False", func() (string, bool) {
		g, err := ic.NetworkingV1().Gateways(evilNS).Get(ctx, "takeover", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		got := valid(&g.Status)
		return got, strings.HasPrefix(got, "False/Invalid") && strings.Contains(got, "spec.selector") &&
			strings.Contains(got, "Gateway API Gateway "+edgeNS+"/edge")
	}, apiPoll...)
	poll.Seen(t, "VirtualService "+friendNS+"/tenant Valid True", func() (string, bool) {
		v, err := ic.NetworkingV1().VirtualServices(friendNS).Get(ctx, "tenant", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		got := valid(&v.Status)
		return got, strings.HasPrefix(got, "True/")
	}, apiPoll...)

	// The label taken off friend-*: its VirtualService leaves the 8080
	// listener (the conversion follows Namespace labels).
	friend, err = cs.CoreV1().Namespaces().Get(ctx, friendNS, metav1.GetOptions{})
	must(friend, err)
	delete(friend.Labels, "edge-access")
	must(cs.CoreV1().Namespaces().Update(ctx, friend, metav1.UpdateOptions{}))
	waitFor(t, proxy, "tenant.example.com gone from 8080 once friend-* is unlabelled", func(s adsc.State) bool {
		return !hasHost("http.8080", s, "tenant.example.com")
	})
}
