package kube

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// condIs describes a condition and reports whether it has the status and
// reason wanted.
func condIs(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) (string, bool) {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return typ + " missing", false
	}
	return fmt.Sprintf("%s %s/%s (generation %d): %s", typ, c.Status, c.Reason, c.ObservedGeneration, c.Message),
		c.Status == status && c.Reason == reason
}

// The Gateway API status the leader writes, read back from the API server:
// the GatewayClass Accepted, the Gateway Accepted and Programmed with its
// listener's attachedRoutes, an HTTPRoute Accepted with ResolvedRefs, and
// a route to a Service of another namespace RefNotPermitted until a
// ReferenceGrant there allows it.
func TestGatewayAPIStatus(t *testing.T) {
	c, ns := newCluster(t, "gwapi-status")
	other := c.Namespace(t, "gwapi-status-other")
	cs := c.Clientset()
	className := ns + "-wayfinder"
	gwc := gatewayAPIClass(t, c, className)
	api := gwc.GatewayV1()
	ctx := context.Background()
	for _, s := range []struct{ ns, name string }{{ns, "web"}, {other, "shared"}} {
		if _, err := cs.CoreV1().Services(s.ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{{
			Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := gw.PortNumber(8080)
	route := func(name, host string, backendNS *gw.Namespace, backend string) {
		t.Helper()
		if _, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.HTTPRouteSpec{
				CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
				Hostnames:       []gw.Hostname{gw.Hostname(host)},
				Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
					BackendObjectReference: gw.BackendObjectReference{Name: gw.ObjectName(backend), Namespace: backendNS, Port: &port}}}}}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	route("shop", "shop.example.com", nil, "web")

	startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns, other},
		PodName: "wayfinder-0", PodNamespace: ns})

	poll.Seen(t, "GatewayClass Accepted", func() (string, bool) {
		gc, err := api.GatewayClasses().Get(ctx, className, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		return condIs(gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	}, apiPoll...)
	gatewayWith := func(attached int32) func() (string, bool) {
		return func() (string, bool) {
			g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			d1, ok1 := condIs(g.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			d2, ok2 := condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
			if len(g.Status.Listeners) != 1 {
				return fmt.Sprintf("%s; %s; listeners %+v", d1, d2, g.Status.Listeners), false
			}
			l := g.Status.Listeners[0]
			d3, ok3 := condIs(l.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			d4, ok4 := condIs(l.Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
			d5, ok5 := condIs(l.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
			d6, ok6 := condIs(l.Conditions, "Conflicted", metav1.ConditionFalse, "NoConflicts")
			return fmt.Sprintf("%s; %s; listener %s attachedRoutes %d kinds %d: %s; %s; %s; %s", d1, d2, l.Name, l.AttachedRoutes,
					len(l.SupportedKinds), d3, d4, d5, d6),
				ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && l.AttachedRoutes == attached && len(l.SupportedKinds) == 2
		}
	}
	poll.Seen(t, "Gateway Accepted and Programmed, one route attached", gatewayWith(1), apiPoll...)
	routeWith := func(name string, resolved metav1.ConditionStatus, reason string) func() (string, bool) {
		return func() (string, bool) {
			r, err := api.HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error(), false
			}
			if len(r.Status.Parents) != 1 {
				return fmt.Sprintf("parents %+v", r.Status.Parents), false
			}
			p := r.Status.Parents[0]
			d1, ok1 := condIs(p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			d2, ok2 := condIs(p.Conditions, "ResolvedRefs", resolved, reason)
			return fmt.Sprintf("controller %s parent %s: %s; %s", p.ControllerName, p.ParentRef.Name, d1, d2),
				ok1 && ok2 && p.ControllerName == gatewayapi.ControllerName && p.ParentRef.Name == "edge" &&
					p.Conditions[0].ObservedGeneration == r.Generation
		}
	}
	poll.Seen(t, "HTTPRoute shop Accepted and ResolvedRefs", routeWith("shop", metav1.ConditionTrue, "ResolvedRefs"), apiPoll...)

	otherNS := gw.Namespace(other)
	route("cross", "cross.example.com", &otherNS, "shared")
	poll.Seen(t, "HTTPRoute cross RefNotPermitted", routeWith("cross", metav1.ConditionFalse, "RefNotPermitted"), apiPoll...)
	poll.Seen(t, "two routes attached", gatewayWith(2), apiPoll...)

	if _, err := api.ReferenceGrants(other).Create(ctx, &gw.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "allow-routes"},
		Spec: gw.ReferenceGrantSpec{
			From: []gw.ReferenceGrantFrom{{Group: gw.GroupName, Kind: "HTTPRoute", Namespace: gw.Namespace(ns)}},
			To:   []gw.ReferenceGrantTo{{Kind: "Service"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "HTTPRoute cross ResolvedRefs once granted", routeWith("cross", metav1.ConditionTrue, "ResolvedRefs"), apiPoll...)

	// A spec change (generation 2) is converted again, though status
	// writes alone (same generation) are not: its backend is gone.
	// Retried on a conflict with our own status write.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		shop, err := api.HTTPRoutes(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		shop.Spec.Rules[0].BackendRefs[0].Name = "nope"
		_, err = api.HTTPRoutes(ns).Update(ctx, shop, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	poll.Seen(t, "HTTPRoute shop BackendNotFound at generation 2", routeWith("shop", metav1.ConditionFalse, "BackendNotFound"), apiPoll...)
}

// The manifests' RBAC lets the leader write Gateway API status: the server
// runs as the pilot-discovery ServiceAccount, its Lease in its own
// namespace, and the GatewayClass, Gateway and HTTPRoute get status.
func TestGatewayAPIStatusWithManifestRBAC(t *testing.T) {
	c, ns := newCluster(t, "gwapi-status-rbac")
	cfg := asManifestServiceAccount(t, c)

	className := ns + "-wayfinder"
	gwc := gatewayAPIClass(t, c, className)
	api := gwc.GatewayV1()
	ctx := context.Background()
	if _, err := api.Gateways(ns).Create(ctx, &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing"},
		Spec: gw.HTTPRouteSpec{CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "nope", Port: ptrTo(gw.PortNumber(80))}}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The authorizer learns new bindings a moment after they are stored.
	var s *bootstrap.Server
	var err error
	pctx, pcancel := contextWithTimeout()
	defer pcancel()
	_ = wait.PollUntilContextCancel(pctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		s, err = bootstrap.NewServer(bootstrap.Options{KubeRESTConfig: cfg, WatchNamespaces: []string{ns},
			PodNamespace: manifestNamespace, PodName: "wayfinder-rbac-0",
			HTTPAddr: "127.0.0.1:0", Logger: serverenv.Logger(t, slog.LevelInfo),
			Security: bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"}})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("as %s/pilot-discovery with the manifests' RBAC: %v", manifestNamespace, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})

	poll.Seen(t, "GatewayClass Accepted", func() (string, bool) {
		gc, err := api.GatewayClasses().Get(ctx, className, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		return condIs(gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	}, apiPoll...)
	poll.Seen(t, "Gateway Programmed", func() (string, bool) {
		g, err := api.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		return condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
	}, apiPoll...)
	poll.Seen(t, "HTTPRoute BackendNotFound", func() (string, bool) {
		r, err := api.HTTPRoutes(ns).Get(ctx, "missing", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Sprintf("parents %+v", r.Status.Parents), false
		}
		return condIs(r.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound")
	}, apiPoll...)
}

func ptrTo[T any](v T) *T { return &v }
