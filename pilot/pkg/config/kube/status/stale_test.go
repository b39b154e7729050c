package status_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// A class handed to another controller: the status Wayfinder wrote on
// the class and its Gateway goes back to the CRDs' Pending, and the
// route keeps only the other controller's entry; written once.
func TestGatewayAPIStatusClearedWhenNoLongerOurs(t *testing.T) {
	e := newGWAPIEnv(t)
	ctx := context.Background()
	if n, err := e.w.Sync(ctx, always); err != nil || n != 3 {
		t.Fatalf("first sync: %d writes, %v; want 3", n, err)
	}
	// The fake keeps no resourceVersions: a pass that finds the status
	// written clears the writer's memory of its writes.
	if n, err := e.w.Sync(ctx, always); err != nil || n != 0 {
		t.Fatalf("second sync: %d writes, %v; want none", n, err)
	}
	api := e.client.GatewayV1()
	g, _ := api.Gateways("edge").Get(ctx, "gw", metav1.GetOptions{})
	if len(g.Status.Addresses) != 1 || g.Status.Addresses[0].Value != "10.0.0.9" {
		t.Fatalf("addresses %+v, want the Service's cluster IP", g.Status.Addresses)
	}
	cls, _ := api.GatewayClasses().Get(ctx, "wayfinder", metav1.GetOptions{})
	cls.Spec.ControllerName = "example.com/other"
	cls.Generation = 2
	if _, err := api.GatewayClasses().Update(ctx, cls, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.w.Sync(ctx, always); err != nil || n != 3 {
		t.Fatalf("after the class moved: %d writes, %v; want 3 (class, Gateway, route)", n, err)
	}
	g, _ = api.Gateways("edge").Get(ctx, "gw", metav1.GetOptions{})
	for _, typ := range []string{"Accepted", "Programmed"} {
		if c := meta.FindStatusCondition(g.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != "Pending" {
			t.Errorf("Gateway %s %+v, want Unknown/Pending", typ, c)
		}
	}
	if len(g.Status.Listeners) != 0 || len(g.Status.Addresses) != 0 {
		t.Errorf("Gateway keeps listeners %+v, addresses %+v", g.Status.Listeners, g.Status.Addresses)
	}
	cls, _ = api.GatewayClasses().Get(ctx, "wayfinder", metav1.GetOptions{})
	if c := meta.FindStatusCondition(cls.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionUnknown || c.ObservedGeneration != 2 {
		t.Errorf("GatewayClass Accepted %+v, want Unknown at generation 2", c)
	}
	r, _ := api.HTTPRoutes("edge").Get(ctx, "r", metav1.GetOptions{})
	if len(r.Status.Parents) != 1 || r.Status.Parents[0].ControllerName == gatewayapi.ControllerName {
		t.Errorf("route parents %+v, want only the other controller's", r.Status.Parents)
	}
	if n, err := e.w.Sync(ctx, always); err != nil || n != 0 {
		t.Fatalf("again: %d writes, %v; want none", n, err)
	}
}
