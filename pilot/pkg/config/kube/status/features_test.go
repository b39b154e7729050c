package status_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// The status writer puts gatewayapi.SupportedFeatures, sorted, in
// status.supportedFeatures of a GatewayClass of ours, writes nothing more
// once it is there, and takes them away with the rest of our status when
// the class moves to another controller.
func TestGatewayAPIStatusWritesSupportedFeatures(t *testing.T) {
	e := newGWAPIEnv(t)
	ctx := context.Background()
	if _, err := e.w.Sync(ctx, always); err != nil {
		t.Fatal(err)
	}
	api := e.client.GatewayV1()
	cls, err := api.GatewayClasses().Get(ctx, "wayfinder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := cls.Status.SupportedFeatures
	if len(got) != len(gatewayapi.SupportedFeatures) {
		t.Fatalf("%d supported features written, want %d", len(got), len(gatewayapi.SupportedFeatures))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Name >= got[i].Name {
			t.Fatalf("not sorted: %v", got)
		}
	}
	if n, err := e.w.Sync(ctx, always); err != nil || n != 0 {
		t.Fatalf("second sync: %d writes, %v; want none", n, err)
	}

	cls.Spec.ControllerName = "example.com/other"
	if _, err := api.GatewayClasses().Update(ctx, cls, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.w.Sync(ctx, always); err != nil {
		t.Fatal(err)
	}
	cls, err = api.GatewayClasses().Get(ctx, "wayfinder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cls.Status.SupportedFeatures) != 0 {
		t.Errorf("a class no longer ours keeps our features: %v", cls.Status.SupportedFeatures)
	}
	if c := cls.Status.Conditions; len(c) != 1 || c[0].Reason != string(gw.GatewayClassReasonPending) {
		t.Errorf("conditions %+v, want Pending", c)
	}
}
