package kube

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// gatewayAPIEnv is an ingressEnv (server with a secure port and status
// leader) with a GatewayClass of Wayfinder's controller.
func gatewayAPIEnv(t *testing.T, prefix string, also ...string) (*ingressEnv, gwclient.Interface, string) {
	t.Helper()
	e := newIngressEnv(t, prefix, also...)
	for _, ns := range also {
		ensureNamespace(t, e.cluster_, ns)
	}
	className := e.ns + "-wayfinder"
	return e, gatewayAPIClass(t, e.cluster_, className), className
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

	// The ServiceAccount the deployer makes for the Gateway: its Secrets
	// go to proxies running as it.
	sa := "edge-" + className
	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
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
	poll.Seen(t, "listener https RefNotPermitted", listenerResolved(metav1.ConditionFalse, "RefNotPermitted"), apiPoll...)
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
	poll.Until(t, "the Secret sent to the gateway of "+ns, secretsSent([]string{resource}), apiPoll...)
	if names, _ := e.dumpedSecrets(node); !slices.Equal(names, []string{resource}) {
		t.Errorf("config_dump shows secrets %v for the gateway, want [%s]", names, resource)
	}
	poll.Seen(t, "listener https ResolvedRefs once granted", listenerResolved(metav1.ConditionTrue, "ResolvedRefs"), apiPoll...)

	// A proxy of another namespace carrying the same label: nothing, not
	// even asking for the resource by name.
	tenantNode := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: tenantNS, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
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
	poll.Until(t, "the Secret no longer sent", secretsSent(nil), apiPoll...)
	poll.Seen(t, "listener https RefNotPermitted again", listenerResolved(metav1.ConditionFalse, "RefNotPermitted"), apiPoll...)
}

// hasVirtualHost reports whether route configuration rc of s has the
// virtual host name.
func hasVirtualHost(s adsc.State, rc, name string) bool {
	for _, vh := range s.Routes[rc].GetVirtualHosts() {
		if vh.GetName() == name {
			return true
		}
	}
	return false
}

// attachedRoutes returns a Gateway's attachedRoutes per listener, as
// "name=N" sorted by listener order.
func attachedRoutes(g *gw.Gateway) string {
	var out []string
	for _, l := range g.Status.Listeners {
		out = append(out, fmt.Sprintf("%s=%d", l.Name, l.AttachedRoutes))
	}
	return strings.Join(out, ",")
}

// An HTTPRoute moved from one listener to another (its parentRef's
// sectionName changed) leaves the first listener's route configuration
// and appears in the other's, and the listeners' attachedRoutes follow.
func TestGatewayAPIRouteMovesBetweenListeners(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwmove")
	ns := e.ns
	api := gwc.GatewayV1()
	_, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "a", Port: 80, Protocol: gw.HTTPProtocolType},
			{Name: "b", Port: 8080, Protocol: gw.HTTPProtocolType},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	port := gw.PortNumber(80)
	route := func(name, host, section string) *gw.HTTPRoute {
		s := gw.SectionName(section)
		return &gw.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.HTTPRouteSpec{
				CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge", SectionName: &s}}},
				Hostnames:       []gw.Hostname{gw.Hostname(host)},
				Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
					BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}}}},
			},
		}
	}
	_, err = api.HTTPRoutes(ns).Create(ctx, route("stay", "stay.example.com", "a"), metav1.CreateOptions{})
	e.must(err)
	_, err = api.HTTPRoutes(ns).Create(ctx, route("moving", "move.example.com", "a"), metav1.CreateOptions{})
	e.must(err)
	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, "edge-wayfinder", ns)
	attached := func(want string) func() (string, bool) {
		return func() (string, bool) {
			g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			got := attachedRoutes(g)
			return got, got == want
		}
	}

	waitFor(t, proxy, "both routes on listener a (http.80), none on b", func(s adsc.State) bool {
		return hasVirtualHost(s, "http.80", "stay.example.com:80") && hasVirtualHost(s, "http.80", "move.example.com:80") &&
			s.Listeners["0.0.0.0_8080"] != nil && !hasVirtualHost(s, "http.8080", "move.example.com:8080")
	})
	poll.Seen(t, "attachedRoutes a=2, b=0", attached("a=2,b=0"), apiPoll...)

	e.must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		moving, err := api.HTTPRoutes(ns).Get(ctx, "moving", metav1.GetOptions{})
		if err != nil {
			return err
		}
		b := gw.SectionName("b")
		moving.Spec.ParentRefs[0].SectionName = &b
		_, err = api.HTTPRoutes(ns).Update(ctx, moving, metav1.UpdateOptions{})
		return err
	})) // retried on a conflict with our own status write
	waitFor(t, proxy, "the moved route on listener b (http.8080) only", func(s adsc.State) bool {
		return hasVirtualHost(s, "http.80", "stay.example.com:80") && !hasVirtualHost(s, "http.80", "move.example.com:80") &&
			hasVirtualHost(s, "http.8080", "move.example.com:8080")
	})
	poll.Seen(t, "attachedRoutes a=1, b=1", attached("a=1,b=1"), apiPoll...)
	poll.Seen(t, "the moved route's parent status Accepted at its new generation", func() (string, bool) {
		r, err := api.HTTPRoutes(ns).Get(ctx, "moving", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		if len(r.Status.Parents) != 1 || r.Status.Parents[0].ParentRef.SectionName == nil || *r.Status.Parents[0].ParentRef.SectionName != "b" {
			return fmt.Sprintf("parents %+v", r.Status.Parents), false
		}
		d, ok := condIs(r.Status.Parents[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		return d, ok && r.Status.Parents[0].Conditions[0].ObservedGeneration == r.Generation
	}, apiPoll...)
}

// An invalid HTTPRoute among valid ones attached to the same listener:
// the valid ones (one to a ServiceEntry host, kind Hostname) are still
// served; the invalid one's share answers 500 (its backend does not
// exist), its status says BackendNotFound, and /debug/configz names it and
// the field.
func TestGatewayAPIInvalidRouteAmongValidOnes(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwinvalid")
	ns := e.ns
	api := gwc.GatewayV1()
	_, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	port := gw.PortNumber(80)
	ref := func(name string, weight int32) gw.HTTPBackendRef {
		return gw.HTTPBackendRef{BackendRef: gw.BackendRef{Weight: &weight,
			BackendObjectReference: gw.BackendObjectReference{Name: gw.ObjectName(name), Port: &port}}}
	}
	route := func(name, host string, refs ...gw.HTTPBackendRef) {
		t.Helper()
		_, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.HTTPRouteSpec{
				CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
				Hostnames:       []gw.Hostname{gw.Hostname(host)},
				Rules:           []gw.HTTPRouteRule{{BackendRefs: refs}},
			},
		}, metav1.CreateOptions{})
		e.must(err)
	}
	route("good-1", "one.example.com", ref("web", 1))
	// Half of it goes to a Service that does not exist.
	route("bad", "bad.example.com", ref("web", 1), ref("missing", 1))
	route("good-2", "two.example.com", ref("fallback", 1))
	istio, err := istioclient.NewForConfig(e.cluster_.RESTConfig())
	e.must(err)
	_, err = istio.NetworkingV1().ServiceEntries(ns).Create(ctx, &networkingv1.ServiceEntry{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: networking.ServiceEntry{Hosts: []string{"api.external.example"}, Resolution: networking.ServiceEntry_STATIC,
			Ports:     []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}},
			Endpoints: []*networking.WorkloadEntry{{Address: "127.0.0.1"}}},
	}, metav1.CreateOptions{})
	e.must(err)
	hostname := ref("api.external.example", 1)
	hostname.Group, hostname.Kind = ptrTo(gw.Group(gatewayapi.IstioGroup)), ptrTo(gw.Kind(gatewayapi.HostnameKind))
	route("good-3", "three.example.com", hostname)

	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, "edge-wayfinder", ns)
	web, fallback := e.cluster("web"), e.cluster("fallback")
	s := waitFor(t, proxy, "all three virtual hosts", func(s adsc.State) bool {
		return virtualHost(s, "one.example.com", web) && virtualHost(s, "two.example.com", fallback) &&
			virtualHost(s, "three.example.com", "outbound|80||api.external.example") &&
			s.Clusters["outbound|80||api.external.example"] != nil && hasVirtualHost(s, "http.80", "bad.example.com:80")
	})
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() != "bad.example.com:80" {
			continue
		}
		a := vh.GetRoutes()[0].GetRoute()
		wc := a.GetWeightedClusters().GetClusters()
		if len(wc) != 2 || wc[0].GetName() != web || wc[1].GetName() != "gateway-api-invalid-backend" ||
			a.GetClusterNotFoundResponseCode().String() != "INTERNAL_SERVER_ERROR" {
			t.Errorf("the invalid route's missing backend does not answer its share with a 500: %v", a)
		}
	}
	poll.Seen(t, "HTTPRoute bad ResolvedRefs BackendNotFound", func() (string, bool) {
		r, err := api.HTTPRoutes(ns).Get(ctx, "bad", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Sprintf("parents %+v", r.Status.Parents), false
		}
		d1, ok1 := condIs(r.Status.Parents[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		d2, ok2 := condIs(r.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound")
		return d1 + "; " + d2, ok1 && ok2 && strings.Contains(d2, "backendRefs[1]")
	}, apiPoll...)
	for _, good := range []string{"good-1", "good-2", "good-3"} {
		poll.Seen(t, "HTTPRoute "+good+" ResolvedRefs", func() (string, bool) {
			r, err := api.HTTPRoutes(ns).Get(ctx, good, metav1.GetOptions{})
			if err != nil || len(r.Status.Parents) != 1 {
				return fmt.Sprintf("%v %+v", err, r.Status.Parents), false
			}
			return condIs(r.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
		}, apiPoll...)
	}
	var cz struct {
		Errors []struct {
			Source  string `json:"source"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	raw := e.getJSON("/debug/configz", &cz)
	named := false
	for _, er := range cz.Errors {
		if strings.HasPrefix(er.Source, "HTTPRoute "+ns+"/good-") {
			t.Errorf("/debug/configz reports a valid route: %+v", er)
		}
		named = named || (er.Source == "HTTPRoute "+ns+"/bad" && er.Field == "spec.rules[0].backendRefs[1]" && strings.Contains(er.Message, "BackendNotFound"))
	}
	if !named {
		t.Errorf("/debug/configz does not name HTTPRoute %s/bad spec.rules[0].backendRefs[1]: %s", ns, raw)
	}
}
