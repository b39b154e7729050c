package status_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// gwapiEnv is a fake API server with a GatewayClass of ours, a Gateway of
// it and an HTTPRoute whose status already holds another controller's
// entry; Input reads it back as the informer caches would.
type gwapiEnv struct {
	client *gwfake.Clientset
	clock  *clocktesting.FakeClock
	w      *status.GatewayAPIStatus
}

func newGWAPIEnv(t *testing.T) *gwapiEnv {
	t.Helper()
	other := gw.RouteParentStatus{ParentRef: gw.ParentReference{Name: "theirs"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.NewTime(time.Unix(100, 0))}}}
	e := &gwapiEnv{clock: clocktesting.NewFakeClock(time.Unix(5000, 0)), client: gwfake.NewSimpleClientset(
		&gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder", Generation: 1}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}},
		&gw.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "r", Generation: 3}, Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "gw"}, {Name: "theirs"}}},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: ptr(gw.PortNumber(80))}}}}}}},
			Status: gw.HTTPRouteStatus{RouteStatus: gw.RouteStatus{Parents: []gw.RouteParentStatus{other}}}},
	)}
	// Created through the typed client: the fake's tracker files an
	// object given to NewSimpleClientset under the first of its scheme
	// kinds, which for Gateway is another version.
	if _, err := e.client.GatewayV1().Gateways("edge").Create(context.Background(), &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "gw", Generation: 2}, Spec: gw.GatewaySpec{GatewayClassName: "wayfinder",
			Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := status.NewGatewayAPI(status.GatewayAPIOptions{Client: kclienttest.GatewayAPI(e.client), Clock: e.clock, Input: e.input})
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	return e
}

func ptr[T any](v T) *T { return &v }

func (e *gwapiEnv) input() (gatewayapi.Input, error) {
	ctx := context.Background()
	api := e.client.GatewayV1()
	var in gatewayapi.Input
	cls, err := api.GatewayClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, err
	}
	for i := range cls.Items {
		in.GatewayClasses = append(in.GatewayClasses, &cls.Items[i])
	}
	gws, err := api.Gateways("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, err
	}
	for i := range gws.Items {
		in.Gateways = append(in.Gateways, &gws.Items[i])
	}
	rs, err := api.HTTPRoutes("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, err
	}
	for i := range rs.Items {
		in.HTTPRoutes = append(in.HTTPRoutes, &rs.Items[i])
	}
	in.Services = func(ns, name string) *corev1.Service {
		if ns == "edge" && name == "web" {
			return &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		}
		if ns == "edge" && name == "gw-wayfinder" {
			return &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9"}}
		}
		return nil
	}
	return in, nil
}

func always() bool { return true }

func TestGatewayAPIStatusWritesOnlyOnChange(t *testing.T) {
	e := newGWAPIEnv(t)
	ctx := context.Background()
	n, err := e.w.Sync(ctx, always)
	if err != nil || n != 3 {
		t.Fatalf("first sync: %d writes, %v; want 3 (class, Gateway, route)", n, err)
	}
	api := e.client.GatewayV1()
	cls, _ := api.GatewayClasses().Get(ctx, "wayfinder", metav1.GetOptions{})
	if c := meta.FindStatusCondition(cls.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
		t.Errorf("GatewayClass Accepted %+v", c)
	}
	g, _ := api.Gateways("edge").Get(ctx, "gw", metav1.GetOptions{})
	if c := meta.FindStatusCondition(g.Status.Conditions, "Programmed"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 2 {
		t.Errorf("Gateway Programmed %+v", c)
	}
	if len(g.Status.Listeners) != 1 || g.Status.Listeners[0].AttachedRoutes != 1 {
		t.Errorf("listeners %+v, want http with one route", g.Status.Listeners)
	}
	r, _ := api.HTTPRoutes("edge").Get(ctx, "r", metav1.GetOptions{})
	if len(r.Status.Parents) != 2 || r.Status.Parents[0].ControllerName != "example.com/other" ||
		!r.Status.Parents[0].Conditions[0].LastTransitionTime.Equal(ptr(metav1.NewTime(time.Unix(100, 0)))) {
		t.Fatalf("parents %+v, want the other controller's entry untouched, then ours", r.Status.Parents)
	}
	ours := r.Status.Parents[1]
	if ours.ControllerName != gatewayapi.ControllerName || ours.ParentRef.Name != "gw" {
		t.Fatalf("our entry %+v", ours)
	}
	acc := meta.FindStatusCondition(ours.Conditions, "Accepted")
	if acc == nil || acc.Status != metav1.ConditionTrue || acc.ObservedGeneration != 3 ||
		meta.FindStatusCondition(ours.Conditions, "ResolvedRefs").Status != metav1.ConditionTrue {
		t.Errorf("route conditions %+v", ours.Conditions)
	}
	first := acc.LastTransitionTime

	// Nothing changed, time passed: no write, and the times stay.
	e.clock.Step(time.Minute)
	if n, err := e.w.Sync(ctx, always); err != nil || n != 0 {
		t.Fatalf("second sync: %d writes, %v; want none", n, err)
	}
	// The backend disappears: only the route is written, Accepted keeps
	// its time, ResolvedRefs turns False.
	r.Spec.Rules[0].BackendRefs[0].Name = "gone"
	r.Generation = 4
	if _, err := api.HTTPRoutes("edge").Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.w.Sync(ctx, always); err != nil || n != 1 {
		t.Fatalf("after the change: %d writes, %v; want 1", n, err)
	}
	r, _ = api.HTTPRoutes("edge").Get(ctx, "r", metav1.GetOptions{})
	ours = r.Status.Parents[1]
	acc = meta.FindStatusCondition(ours.Conditions, "Accepted")
	if !acc.LastTransitionTime.Equal(&first) || acc.ObservedGeneration != 4 {
		t.Errorf("Accepted %+v: want its time kept (%v) and generation 4", acc, first)
	}
	if rr := meta.FindStatusCondition(ours.Conditions, "ResolvedRefs"); rr.Status != metav1.ConditionFalse || rr.Reason != "BackendNotFound" ||
		rr.LastTransitionTime.Equal(&first) {
		t.Errorf("ResolvedRefs %+v: want False BackendNotFound with a new time", rr)
	}
}

// Without a token nothing is written; the write happens on a later pass.
func TestGatewayAPIStatusRateLimited(t *testing.T) {
	e := newGWAPIEnv(t)
	ctx := context.Background()
	if n, err := e.w.Sync(ctx, func() bool { return false }); err != nil || n != 0 {
		t.Fatalf("without tokens: %d writes, %v", n, err)
	}
	tokens := 1
	take := func() bool { tokens--; return tokens >= 0 }
	if n, _ := e.w.Sync(ctx, take); n != 1 {
		t.Fatalf("one token: %d writes, want 1", n)
	}
	if n, _ := e.w.Sync(ctx, always); n != 2 {
		t.Fatalf("the rest: %d writes, want 2", n)
	}
}
