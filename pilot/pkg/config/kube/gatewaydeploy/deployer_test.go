package gatewaydeploy

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// The deployer applies a handled Gateway's six objects once, watches
// only the objects it labelled, and removes a labelled object its Gateway
// no longer wants; an unlabelled one is not its own.
func TestDeployerAppliesAndWatchesItsOwn(t *testing.T) {
	class := &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}
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
		Input: func() (gatewayapi.Input, error) {
			return gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}}, nil
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
		if n == 0 && d.Applies() >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no steady state within 10s: %d applies, %d deletes", d.Applies(), d.Deletes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d.Applies() != 6 || d.Deletes() != 1 {
		t.Errorf("%d applies, %d deletes; want 6 and 1 (the stray ServiceAccount)", d.Applies(), d.Deletes())
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

// An object named like one of a Gateway's that the deployer did not make
// (no managed label, or controlled by another Gateway) is neither written
// nor deleted, nothing else of that Gateway is applied, and Held names it;
// an object in the way is read again only after the recheck interval, and
// once it is gone the Gateway is deployed.
func TestDeployerLeavesWhatItDidNotMake(t *testing.T) {
	class := &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}
	listeners := []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}
	edge := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge", UID: "edge-uid"},
		Spec: gw.GatewaySpec{GatewayClassName: "wayfinder", Listeners: listeners}}
	// "a-b" of class "wayfinder" and "a" of class "b-wayfinder" deploy
	// under the same name; the second is held by the first's objects.
	other := &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "b-wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}
	ab := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "a-b", UID: "ab-uid"},
		Spec: gw.GatewaySpec{GatewayClassName: "wayfinder", Listeners: listeners}}
	a := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "a", UID: "a-uid"},
		Spec: gw.GatewaySpec{GatewayClassName: "b-wayfinder", Listeners: listeners}}
	user := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge-wayfinder", UID: "user-svc", ResourceVersion: "7"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Port: 8443}}}}
	kube := fake.NewClientset(user.DeepCopy())
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	d, err := New(DeployerOptions{Kube: kclienttest.Kube(kube), Namespaces: []string{"edge-ns"},
		Input: func() (gatewayapi.Input, error) {
			return gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class, other}, Gateways: []*gw.Gateway{edge, ab, a}}, nil
		},
		Render: testOptions(), Clock: clk, Recheck: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	// Passes until nothing more is written and a-b's objects are in the
	// caches (what holds a back).
	settle := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := d.Sync(ctx, func() bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			if _, _, held := d.Held("edge-ns", "a"); n == 0 && held {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no steady state within 10s: %d applies", what, d.Applies())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	settle("first passes")
	reason, msg, held := d.Held("edge-ns", "edge")
	if !held || reason != HeldReason || !strings.Contains(msg, "Service edge-wayfinder exists and is not managed by Wayfinder") {
		t.Errorf("edge held %v: %s %q", held, reason, msg)
	}
	if _, msg, held := d.Held("edge-ns", "a"); !held || !strings.Contains(msg, "belongs to Gateway edge-ns/a-b") {
		t.Errorf("a held %v: %q", held, msg)
	}
	if _, _, held := d.Held("edge-ns", "a-b"); held {
		t.Error("a-b held, want deployed")
	}
	got, err := kube.CoreV1().Services("edge-ns").Get(ctx, "edge-wayfinder", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != "7" || len(got.OwnerReferences) != 0 || len(got.Labels) != 0 {
		t.Errorf("the user's Service: %v, rv %s, owners %v, labels %v; want unchanged", err, got.ResourceVersion, got.OwnerReferences, got.Labels)
	}
	for _, n := range []string{"edge-wayfinder"} {
		if _, err := kube.CoreV1().ServiceAccounts("edge-ns").Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ServiceAccount %s: %v, want none: edge is held", n, err)
		}
		if _, err := kube.AppsV1().Deployments("edge-ns").Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment %s: %v, want none: edge is held", n, err)
		}
	}
	sa, err := kube.CoreV1().ServiceAccounts("edge-ns").Get(ctx, "a-b-wayfinder", metav1.GetOptions{})
	if err != nil || metav1.GetControllerOf(sa).UID != ab.UID {
		t.Fatalf("a-b's ServiceAccount: %v %+v", err, sa)
	}

	// The user's Service goes; it is read again after the recheck
	// interval only, then edge is deployed.
	if err := kube.CoreV1().Services("edge-ns").Delete(ctx, "edge-wayfinder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	applies := d.Applies()
	if _, err := d.Sync(ctx, func() bool { return true }); err != nil || d.Applies() != applies {
		t.Errorf("within the recheck interval: %d applies (%v), want none", d.Applies()-applies, err)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	settle("after the recheck interval")
	if _, _, held := d.Held("edge-ns", "edge"); held {
		t.Error("edge still held after its Service went")
	}
	svc, err := kube.CoreV1().Services("edge-ns").Get(ctx, "edge-wayfinder", metav1.GetOptions{})
	if err != nil || metav1.GetControllerOf(svc) == nil || metav1.GetControllerOf(svc).UID != edge.UID {
		t.Errorf("edge's Service: %v %+v", err, svc)
	}

	// The label taken off edge's ConfigMap: it is no longer the
	// deployer's; it is not written again, edge is held, and the objects
	// made before for edge stay.
	cm, err := kube.CoreV1().ConfigMaps("edge-ns").Get(ctx, "edge-wayfinder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Labels, ManagedLabel)
	cm.Data = map[string]string{"mine": "now"}
	if cm, err = kube.CoreV1().ConfigMaps("edge-ns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := d.Sync(ctx, func() bool { return true }); err != nil {
			t.Fatal(err)
		}
		if _, msg, held := d.Held("edge-ns", "edge"); held && strings.Contains(msg, "ConfigMap edge-wayfinder") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("edge not held by its unlabelled ConfigMap within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := kube.CoreV1().ConfigMaps("edge-ns").Get(ctx, "edge-wayfinder", metav1.GetOptions{}); err != nil || got.ResourceVersion != cm.ResourceVersion {
		t.Errorf("the unlabelled ConfigMap was written: %v %+v", err, got)
	}
	if _, err := kube.AppsV1().Deployments("edge-ns").Get(ctx, "edge-wayfinder", metav1.GetOptions{}); err != nil {
		t.Errorf("edge's Deployment, made before it was held: %v, want kept", err)
	}
}
