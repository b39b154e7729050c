package status_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// The writer puts a ListenerSet's computed status on it (conditions and
// per-listener status), writes nothing while it holds, and puts it back to
// the CRD's Pending once its Gateway is no longer Wayfinder's.
func TestGatewayAPIStatusWritesListenerSets(t *testing.T) {
	ctx := context.Background()
	client := gwfake.NewSimpleClientset()
	api := client.GatewayV1()
	from := gw.NamespacesFromSame
	if _, err := api.GatewayClasses().Create(ctx, &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder", Generation: 1},
		Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Gateways("edge").Create(ctx, &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "gw", Generation: 1},
		Spec: gw.GatewaySpec{GatewayClassName: "wayfinder", AllowedListeners: &gw.AllowedListeners{Namespaces: &gw.ListenerNamespaces{From: &from}},
			Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ListenerSets("edge").Create(ctx, &gw.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "set", Generation: 4},
		Spec: gw.ListenerSetSpec{ParentRef: gw.ParentGatewayReference{Name: "gw"},
			Listeners: []gw.ListenerEntry{{Name: "extra", Port: 8080, Protocol: gw.HTTPProtocolType}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	input := func() (gatewayapi.Input, error) {
		var objs []metav1.Object
		cls, _ := api.GatewayClasses().List(ctx, metav1.ListOptions{})
		for i := range cls.Items {
			objs = append(objs, &cls.Items[i])
		}
		gws, _ := api.Gateways("").List(ctx, metav1.ListOptions{})
		for i := range gws.Items {
			objs = append(objs, &gws.Items[i])
		}
		sets, err := api.ListenerSets("").List(ctx, metav1.ListOptions{})
		for i := range sets.Items {
			objs = append(objs, &sets.Items[i])
		}
		return gatewayapi.InputOf(objs), err
	}
	w, err := status.NewGatewayAPI(status.GatewayAPIOptions{Client: kclienttest.GatewayAPI(client),
		Clock: clocktesting.NewFakeClock(time.Unix(5000, 0)), Input: input})
	if err != nil {
		t.Fatal(err)
	}
	always := func() bool { return true }
	if _, err := w.Sync(ctx, always); err != nil {
		t.Fatal(err)
	}
	ls, err := api.ListenerSets("edge").Get(ctx, "set", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acc := meta.FindStatusCondition(ls.Status.Conditions, "Accepted")
	if acc == nil || acc.Status != metav1.ConditionTrue || acc.ObservedGeneration != 4 || len(ls.Status.Listeners) != 1 ||
		!meta.IsStatusConditionTrue(ls.Status.Listeners[0].Conditions, "Programmed") {
		t.Fatalf("ListenerSet status %+v, want Accepted at generation 4 with its listener Programmed", ls.Status)
	}
	if n, err := w.Sync(ctx, always); err != nil || n != 0 {
		t.Errorf("second pass wrote %d (%v), want nothing", n, err)
	}

	// The class goes to another controller: the set is no longer ours.
	cls, _ := api.GatewayClasses().Get(ctx, "wayfinder", metav1.GetOptions{})
	cls.Spec.ControllerName = "example.com/other"
	if _, err := api.GatewayClasses().Update(ctx, cls, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sync(ctx, always); err != nil {
		t.Fatal(err)
	}
	ls, _ = api.ListenerSets("edge").Get(ctx, "set", metav1.GetOptions{})
	if p := meta.FindStatusCondition(ls.Status.Conditions, "Programmed"); p == nil || p.Status != metav1.ConditionUnknown || p.Reason != "Pending" ||
		len(ls.Status.Listeners) != 0 {
		t.Errorf("ListenerSet status %+v, want Pending once no longer ours", ls.Status)
	}
}
