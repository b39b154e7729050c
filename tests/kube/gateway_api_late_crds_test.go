package kube

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	cfgschema "github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Wayfinder started on a cluster without the Gateway API CRDs is ready at
// once; when the CRDs are installed afterwards, a GatewayClass, Gateway
// and HTTPRoute created then reach the gateway proxy, and their status is
// written, without a restart.
func TestGatewayAPICRDsInstalledAfterStart(t *testing.T) {
	c := apiserver.Start(t, apiserver.Options{SkipGatewayAPICRDs: true})
	ns := c.Namespace(t, "gwapi-late")
	cs := c.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// startServer returns once ready: no Gateway API CRD holds it back.
	server := startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})

	if err := c.ApplyGatewayAPICRDs(ctx); err != nil {
		t.Fatal(err)
	}
	gwc, err := gwclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	api := gwc.GatewayV1()
	if _, err := api.GatewayClasses().Create(ctx, &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"},
		Spec:       gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: "wayfinder", Listeners: []gw.Listener{{
			Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := gw.PortNumber(8080)
	if _, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"shop.example.com"},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	proxy := gatewayProxy(t, server.GRPCAddr().String(), ns, "edge-1", "edge")
	webCluster := "outbound|8080||web." + ns + ".svc.cluster.local"
	waitFor(t, proxy, "the HTTPRoute created after the CRDs were installed", func(s adsc.State) bool {
		for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
			if vh.GetName() == "shop.example.com:80" && len(vh.GetRoutes()) > 0 && vh.GetRoutes()[0].GetRoute().GetCluster() == webCluster {
				return true
			}
		}
		return false
	})
	poll.Seen(t, "Gateway Accepted and Programmed", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d1, ok1 := condIs(g.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		d2, ok2 := condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
		return d1 + "; " + d2, ok1 && ok2
	}, apiPoll...)
	poll.Seen(t, "HTTPRoute Accepted with ResolvedRefs", func() (string, bool) {
		r, err := api.HTTPRoutes(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Sprintf("parents %+v", r.Status.Parents), false
		}
		d1, ok1 := condIs(r.Status.Parents[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		d2, ok2 := condIs(r.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
		return d1 + "; " + d2, ok1 && ok2
	}, apiPoll...)
}

// --gateway-api=false in Kubernetes mode: with the CRDs installed and a
// Gateway and HTTPRoute of a handled class, nothing is converted (no
// generated config in the store, no listener for the Gateway's proxy).
func TestGatewayAPIOffInKubernetesMode(t *testing.T) {
	c, ns := newCluster(t, "gwapi-off")
	className := ns + "-wayfinder"
	api := gatewayAPIClass(t, c, className).GatewayV1()
	ctx := context.Background()
	if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{{
			Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		GatewayAPI: bootstrap.GatewayAPIOptions{Disabled: true}})
	proxy := gatewayProxy(t, server.GRPCAddr().String(), ns, "edge-1", "edge")
	s := waitFor(t, proxy, "a first listener answer", func(s adsc.State) bool { return s.Types[adsc.ListenerType].ACKs > 0 })
	if len(s.Listeners) != 0 {
		t.Errorf("the Gateway was served with the Gateway API off: %s", describe(s))
	}
	if got := server.Store().List(cfgschema.Gateway, ns); len(got) != 0 {
		t.Errorf("generated Gateways with the Gateway API off: %v", got)
	}
}
