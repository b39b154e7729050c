package kube

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// A ListenerSet on a real API server: attached to a Gateway that allows its
// namespace, its status (Accepted, Programmed, per listener attachedRoutes
// and Conflicted for the listener that clashes with the Gateway's), the
// Gateway's attachedListenerSets and the route's parents entry for the
// ListenerSet, all read back from the API server; when the Gateway stops
// allowing ListenerSets the set is NotAllowed and the Gateway counts none.
func TestGatewayAPIListenerSet(t *testing.T) {
	c, ns := newCluster(t, "gwapi-lset")
	cs := c.Clientset()
	className := ns + "-wayfinder"
	gwc := gatewayAPIClass(t, c, className)
	api := gwc.GatewayV1()
	ctx := context.Background()
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	same := gw.NamespacesFromSame
	if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className),
			AllowedListeners: &gw.AllowedListeners{Namespaces: &gw.ListenerNamespaces{From: &same}},
			Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ListenerSets(ns).Create(ctx, &gw.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gw.ListenerSetSpec{ParentRef: gw.ParentGatewayReference{Name: "edge"}, Listeners: []gw.ListenerEntry{
			{Name: "shop", Port: 8080, Protocol: gw.HTTPProtocolType},
			{Name: "clash", Port: 80, Protocol: gw.HTTPProtocolType},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := gw.PortNumber(8080)
	kind := gw.Kind("ListenerSet")
	if _, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Kind: &kind, Name: "shop"}}},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})

	poll.Seen(t, "ListenerSet Accepted, shop attached, clash Conflicted", func() (string, bool) {
		ls, err := api.ListenerSets(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d1, ok1 := condIs(ls.Status.Conditions, "Accepted", metav1.ConditionTrue, "ListenersNotValid")
		d2, ok2 := condIs(ls.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
		if len(ls.Status.Listeners) != 2 {
			return fmt.Sprintf("%s; %s; listeners %+v", d1, d2, ls.Status.Listeners), false
		}
		shop, clash := ls.Status.Listeners[0], ls.Status.Listeners[1]
		d3, ok3 := condIs(shop.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
		d4, ok4 := condIs(clash.Conditions, "Conflicted", metav1.ConditionTrue, "HostnameConflict")
		d5, ok5 := condIs(clash.Conditions, "Accepted", metav1.ConditionFalse, "HostnameConflict")
		return fmt.Sprintf("%s; %s; shop attachedRoutes %d: %s; clash: %s; %s", d1, d2, shop.AttachedRoutes, d3, d4, d5),
			ok1 && ok2 && ok3 && ok4 && ok5 && shop.AttachedRoutes == 1 && ls.Status.Conditions[0].ObservedGeneration == ls.Generation
	}, apiPoll...)
	gatewaySets := func(want int32) func() (string, bool) {
		return func() (string, bool) {
			g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			if g.Status.AttachedListenerSets == nil {
				return "attachedListenerSets unset", false
			}
			return fmt.Sprintf("attachedListenerSets %d", *g.Status.AttachedListenerSets), *g.Status.AttachedListenerSets == want
		}
	}
	poll.Seen(t, "Gateway counts one ListenerSet", gatewaySets(1), apiPoll...)
	poll.Seen(t, "HTTPRoute Accepted by the ListenerSet", func() (string, bool) {
		r, err := api.HTTPRoutes(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Sprintf("parents %+v", r.Status.Parents), false
		}
		p := r.Status.Parents[0]
		d, ok := condIs(p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		return fmt.Sprintf("parent %v/%s: %s", p.ParentRef.Kind, p.ParentRef.Name, d), ok && p.ParentRef.Kind != nil && *p.ParentRef.Kind == kind
	}, apiPoll...)

	// The Gateway stops allowing ListenerSets.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Spec.AllowedListeners = nil
		_, err = api.Gateways(ns).Update(ctx, g, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "ListenerSet NotAllowed", func() (string, bool) {
		ls, err := api.ListenerSets(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		d1, ok1 := condIs(ls.Status.Conditions, "Accepted", metav1.ConditionFalse, "NotAllowed")
		d2, ok2 := condIs(ls.Status.Conditions, "Programmed", metav1.ConditionFalse, "NotAllowed")
		return d1 + "; " + d2, ok1 && ok2 && len(ls.Status.Listeners) == 0
	}, apiPoll...)
	poll.Seen(t, "Gateway counts no ListenerSet", gatewaySets(0), apiPoll...)
}
