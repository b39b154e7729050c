package gatewaydeploy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gateway"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// The deployer applies a handled Gateway's four objects once, watches
// only the objects it labelled, and removes a labelled object its Gateway
// no longer wants; an unlabelled one is not its own.
func TestDeployerAppliesAndWatchesItsOwn(t *testing.T) {
	class := &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gateway.ControllerName}}
	g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge", UID: "edge-uid"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
	}}
	owned := func(name string, lbls map[string]string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: name, UID: types.UID("uid-" + name), Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: gw.GroupVersion.String(), Kind: "Gateway", Name: "edge", UID: g.UID, Controller: ptr(true)}}}}
	}
	kube := fake.NewClientset(owned("stray", map[string]string{ManagedLabel: ManagedLabelValue}), owned("foreign", nil))
	d, err := New(DeployerOptions{Kube: kclienttest.Kube(kube), Namespaces: []string{"edge-ns"},
		Input: func() (gateway.Input, error) {
			return gateway.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}}, nil
		},
		Render: testOptions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	always := func() bool { return true }
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := d.Sync(ctx, always)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && d.Applies() >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no steady state within 10s: %d applies, %d deletes", d.Applies(), d.Deletes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d.Applies() != 4 || d.Deletes() != 1 {
		t.Errorf("%d applies, %d deletes; want 4 and 1 (the stray ServiceAccount)", d.Applies(), d.Deletes())
	}
	if _, err := kube.CoreV1().ServiceAccounts("edge-ns").Get(ctx, "stray", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("stray ServiceAccount: %v, want deleted", err)
	}
	if _, err := kube.CoreV1().ServiceAccounts("edge-ns").Get(ctx, "foreign", metav1.GetOptions{}); err != nil {
		t.Errorf("unlabelled ServiceAccount: %v, want kept", err)
	}
	if l, err := kube.AppsV1().Deployments("edge-ns").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("Deployments applied: %v (%v), want one", l, err)
	}
}
