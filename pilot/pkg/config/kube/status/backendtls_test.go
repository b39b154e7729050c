package status_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// A BackendTLSPolicy on the Service a route of our Gateway reaches gets
// the Gateway as ancestor under Wayfinder's controllerName, after the
// entry another controller wrote there (kept untouched, as istiod keeps
// it in its backend-tls-policy golden); nothing is written again while
// nothing changes; a policy reaching no Gateway of ours loses our entry.
func TestGatewayAPIStatusBackendTLSPolicy(t *testing.T) {
	e := newGWAPIEnv(t)
	ctx := context.Background()
	other := gw.PolicyAncestorStatus{AncestorRef: gw.ParentReference{Group: ptr(gw.Group("")), Kind: ptr(gw.Kind("Service")), Name: "web"},
		ControllerName: "example.com/other", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
			Message: "hello", LastTransitionTime: metav1.NewTime(time.Unix(100, 0))}}}
	sys := gw.WellKnownCACertificatesSystem
	policy := &gw.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "web-tls", Generation: 5},
		Spec: gw.BackendTLSPolicySpec{
			TargetRefs: []gw.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gw.LocalPolicyTargetReference{Kind: "Service", Name: "web"}}},
			Validation: gw.BackendTLSPolicyValidation{WellKnownCACertificates: &sys, Hostname: "web.example.com"}},
		Status: gw.PolicyStatus{Ancestors: []gw.PolicyAncestorStatus{other}}}
	api := e.client.GatewayV1()
	if _, err := api.BackendTLSPolicies("edge").Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := e.input
	input := func() (gatewayapi.Input, error) {
		in, err := base()
		if err != nil {
			return in, err
		}
		ps, err := api.BackendTLSPolicies("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return in, err
		}
		for i := range ps.Items {
			in.BackendTLSPolicies = append(in.BackendTLSPolicies, &ps.Items[i])
		}
		return in, nil
	}
	w, err := status.NewGatewayAPI(status.GatewayAPIOptions{Client: kclienttest.GatewayAPI(e.client), Clock: e.clock, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sync(ctx, always); err != nil {
		t.Fatal(err)
	}
	got, _ := api.BackendTLSPolicies("edge").Get(ctx, "web-tls", metav1.GetOptions{})
	if len(got.Status.Ancestors) != 2 || got.Status.Ancestors[0].ControllerName != "example.com/other" ||
		got.Status.Ancestors[0].Conditions[0].Message != "hello" {
		t.Fatalf("ancestors %+v, want the other controller's entry untouched, then ours", got.Status.Ancestors)
	}
	ours := got.Status.Ancestors[1]
	if ours.ControllerName != gatewayapi.ControllerName || ours.AncestorRef.Name != "gw" || ptrDeref(ours.AncestorRef.Kind) != "Gateway" ||
		ptrDeref(ours.AncestorRef.Namespace) != "edge" {
		t.Fatalf("our entry %+v, want the Gateway edge/gw", ours)
	}
	for _, typ := range []string{"Accepted", "ResolvedRefs"} {
		if c := meta.FindStatusCondition(ours.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 5 {
			t.Errorf("%s %+v, want True at generation 5", typ, c)
		}
	}
	if n, err := w.Sync(ctx, always); err != nil || n != 0 {
		t.Fatalf("second sync: %d writes, %v; want none", n, err)
	}

	// The route goes: no Gateway of ours reaches the Service any more.
	if err := api.HTTPRoutes("edge").Delete(ctx, "r", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sync(ctx, always); err != nil {
		t.Fatal(err)
	}
	got, _ = api.BackendTLSPolicies("edge").Get(ctx, "web-tls", metav1.GetOptions{})
	if len(got.Status.Ancestors) != 1 || got.Status.Ancestors[0].ControllerName != "example.com/other" {
		t.Errorf("ancestors %+v, want only the other controller's", got.Status.Ancestors)
	}
}

func ptrDeref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
