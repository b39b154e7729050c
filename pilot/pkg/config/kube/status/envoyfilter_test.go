package status

import (
	"strings"
	"testing"

	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// An invalid EnvoyFilter gets Valid False naming the field, a valid one
// Valid True, written to the status subresource at
// networking.istio.io/v1alpha3.
func TestIstioWriterWritesEnvoyFilterStatus(t *testing.T) {
	client := istiofake.NewSimpleClientset(
		&networkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "bad", Generation: 2}},
		&networkingv1alpha3.EnvoyFilter{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "good", Generation: 1}},
	)
	bad := config.Key{Kind: schema.EnvoyFilter, Namespace: "edge", Name: "bad"}
	good := config.Key{Kind: schema.EnvoyFilter, Namespace: "edge", Name: "good"}
	state := map[config.Key]*model.ObjectState{
		bad:  {Errors: []*config.Error{{Key: bad, Field: "spec.configPatches[2].patch.value", Message: "unknown @type"}}},
		good: {},
	}
	writes := 0
	client.PrependReactor("update", "envoyfilters", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			writes++
		}
		return false, nil, nil
	})
	w, ctx := newTelemetryWriter(t, client, state)
	if !cache.WaitForCacheSync(ctx.Done(), w.factories[0].EnvoyFilters().Informer().HasSynced) {
		t.Fatal("EnvoyFilter informer never synced")
	}
	if err := w.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	efs := client.NetworkingV1alpha3().EnvoyFilters("edge")
	b, err := efs.Get(ctx, "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := condition(&b.Status, ConditionValid); writes != 2 || v.Status != "False" ||
		!strings.Contains(v.Message, "spec.configPatches[2].patch.value") || b.Status.ObservedGeneration != 2 {
		t.Fatalf("%d status writes; bad Valid = %v, observedGeneration %d", writes, v, b.Status.ObservedGeneration)
	}
	g, err := efs.Get(ctx, "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := condition(&g.Status, ConditionValid); v.Status != "True" {
		t.Fatalf("good Valid = %v", v)
	}
}

// Where the EnvoyFilter CRD is not installed, the other kinds' status is
// still written.
func TestIstioWriterDoesNotWaitForEnvoyFilterCRD(t *testing.T) {
	client := istiofake.NewSimpleClientset()
	client.PrependReactor("list", "envoyfilters", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(k8sschema.GroupResource{Group: "networking.istio.io", Resource: "envoyfilters"}, "")
	})
	w, ctx := newTelemetryWriter(t, client, nil)
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		t.Fatal("the networking informers never synced")
	}
	if w.factories[0].EnvoyFilters().Informer().HasSynced() {
		t.Fatal("the EnvoyFilter informer synced although listing fails")
	}
	if err := w.syncAll(ctx); err != nil {
		t.Fatalf("a pass without the EnvoyFilter CRD: %v", err)
	}
}
