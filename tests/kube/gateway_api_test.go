package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// gatewayProxy connects an Envoy-like gateway of namespace ns labelled as
// the proxy of Gateway name.
func gatewayProxy(t *testing.T, addr, ns, pod, name string) *adsc.Client {
	t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	c, err := adsc.Dial(ctx, adsc.Config{
		Address: addr,
		Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: ns,
			Labels: map[string]string{gatewayapi.GatewayNameLabel: name}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Against a real API server with the Gateway API CRDs: a GatewayClass,
// Gateway and HTTPRoute created reach a gateway proxy of the Gateway's
// namespace carrying its name, in Gateway API order; a proxy of another
// namespace with the same label gets nothing; a backend in another
// namespace is served only while a ReferenceGrant allows it; deleting the
// route removes its virtual host.
func TestGatewayAPIAgainstAPIServer(t *testing.T) {
	c, ns := newCluster(t, "gwapi")
	other := c.Namespace(t, "gwapi-other")
	cs := c.Clientset()
	className := ns + "-wayfinder"
	gwc := gatewayAPIClass(t, c, className)
	ctx := context.Background()
	for _, name := range []string{"web", "api"} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gwc.GatewayV1().Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{{
			Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := gw.PortNumber(8080)
	prefix, exact := gw.PathMatchPathPrefix, gw.PathMatchExact
	backend := func(name string) []gw.HTTPBackendRef {
		return []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{BackendObjectReference: gw.BackendObjectReference{Name: gw.ObjectName(name), Port: &port}}}}
	}
	if _, err := gwc.GatewayV1().HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"shop.example.com"},
			Rules: []gw.HTTPRouteRule{
				{Matches: []gw.HTTPRouteMatch{{Path: &gw.HTTPPathMatch{Type: &prefix, Value: new("/")}}}, BackendRefs: backend("web")},
				{Matches: []gw.HTTPRouteMatch{{Path: &gw.HTTPPathMatch{Type: &exact, Value: new("/api")}}}, BackendRefs: backend("api")},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	server := startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns, other}})
	addr := server.GRPCAddr().String()
	proxy := gatewayProxy(t, addr, ns, "edge-1", "edge")
	webCluster, apiCluster := "outbound|8080||web."+ns+".svc.cluster.local", "outbound|8080||api."+ns+".svc.cluster.local"
	s := waitFor(t, proxy, "the HTTPRoute's virtual host, Exact /api before PathPrefix /", func(s adsc.State) bool {
		for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
			if vh.GetName() == "shop.example.com:80" && len(vh.GetRoutes()) == 2 {
				return true
			}
		}
		return false
	})
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() != "shop.example.com:80" {
			continue
		}
		r := vh.GetRoutes()
		if r[0].GetMatch().GetPath() != "/api" || r[0].GetRoute().GetCluster() != apiCluster ||
			r[1].GetMatch().GetPrefix() != "/" || r[1].GetRoute().GetCluster() != webCluster {
			t.Errorf("routes in the wrong order or to the wrong clusters: %v", r)
		}
	}
	if _, ok := s.Listeners["0.0.0.0_80"]; !ok {
		t.Errorf("no listener 0.0.0.0_80: %s", describe(s))
	}

	// A proxy of another namespace with the same label gets nothing: once
	// it has its first answer, it holds no listener.
	stranger := gatewayProxy(t, addr, other, "edge-1", "edge")
	s = waitFor(t, stranger, "a first listener answer", func(s adsc.State) bool {
		return s.Types[adsc.ListenerType].ACKs > 0
	})
	if len(s.Listeners) != 0 || len(s.Routes) != 0 {
		t.Errorf("a proxy of namespace %s got the Gateway of %s: %s", other, ns, describe(s))
	}

	// A backend in another namespace: refused (the rule answers 500)
	// until a ReferenceGrant there allows it, and again once it is gone.
	if _, err := cs.CoreV1().Services(other).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "shared"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	otherNS := gw.Namespace(other)
	if _, err := gwc.GatewayV1().HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"shared.example.com"},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "shared", Namespace: &otherNS, Port: &port}}}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sharedCluster := "outbound|8080||shared." + other + ".svc.cluster.local"
	sharedRoute := func(s adsc.State) (cluster string, status uint32, found bool) {
		for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
			if vh.GetName() == "shared.example.com:80" && len(vh.GetRoutes()) == 1 {
				r := vh.GetRoutes()[0]
				return r.GetRoute().GetCluster(), r.GetDirectResponse().GetStatus(), true
			}
		}
		return "", 0, false
	}
	waitFor(t, proxy, "the cross-namespace backend refused: 500", func(s adsc.State) bool {
		_, status, ok := sharedRoute(s)
		return ok && status == 500
	})
	if _, err := gwc.GatewayV1().ReferenceGrants(other).Create(ctx, &gw.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "from-" + ns},
		Spec: gw.ReferenceGrantSpec{
			From: []gw.ReferenceGrantFrom{{Group: gw.GroupName, Kind: "HTTPRoute", Namespace: gw.Namespace(ns)}},
			To:   []gw.ReferenceGrantTo{{Group: "", Kind: "Service"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, proxy, "the cross-namespace backend served once granted", func(s adsc.State) bool {
		cluster, _, ok := sharedRoute(s)
		return ok && cluster == sharedCluster
	})
	if err := gwc.GatewayV1().ReferenceGrants(other).Delete(ctx, "from-"+ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, proxy, "the cross-namespace backend refused again once the grant is gone", func(s adsc.State) bool {
		_, status, ok := sharedRoute(s)
		return ok && status == 500
	})

	if err := gwc.GatewayV1().HTTPRoutes(ns).Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, proxy, "the virtual host gone with its HTTPRoute", func(s adsc.State) bool {
		for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
			if vh.GetName() == "shop.example.com:80" {
				return false
			}
		}
		return true
	})
}
