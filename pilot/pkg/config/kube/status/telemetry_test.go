package status

import (
	"context"
	"strings"
	"testing"
	"time"

	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

func newTelemetryWriter(t *testing.T, client *istiofake.Clientset, state map[config.Key]*model.ObjectState) (*IstioWriter, context.Context) {
	t.Helper()
	w, err := NewIstio(IstioOptions{
		Kube: kclienttest.Kube(fake.NewClientset()), Istio: kclienttest.Istio(client), LeaseNamespace: "wayfinder", Identity: "pod-a",
		State: func() map[config.Key]*model.ObjectState { return state },
		QPS:   100, Burst: 100, Clock: clocktesting.NewFakeClock(time.Unix(5000, 0)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(func() {
		cancel()
		for _, f := range w.factories {
			f.Shutdown()
		}
	})
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
	return w, ctx
}

// An invalid Telemetry gets the status of any invalid Istio object:
// Valid False naming the field, written to its status subresource.
func TestIstioWriterWritesTelemetryStatus(t *testing.T) {
	client := istiofake.NewSimpleClientset(&telemetryv1.Telemetry{
		ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "bad", Generation: 3}})
	key := config.Key{Kind: schema.Telemetry, Namespace: "edge", Name: "bad"}
	state := map[config.Key]*model.ObjectState{key: {Errors: []*config.Error{{Key: key,
		Field: "spec.tracing[0].providers[0].name", Message: "provider name may not be empty"}}}}
	// Written by syncAll on this goroutine; the reactor is in place before
	// the informers start reading the reactor chain.
	var statusWrites int
	client.PrependReactor("update", "telemetries", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			statusWrites++
		}
		return false, nil, nil
	})
	w, ctx := newTelemetryWriter(t, client, state)
	if !cache.WaitForCacheSync(ctx.Done(), w.factories[0].Telemetries().Informer().HasSynced) {
		t.Fatal("Telemetry informer never synced")
	}
	if err := w.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := client.TelemetryV1().Telemetries("edge").Get(ctx, "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := condition(&got.Status, ConditionValid)
	if statusWrites != 1 || v.Status != "False" || v.Reason != "Invalid" || !strings.Contains(v.Message, "spec.tracing[0].providers[0].name") ||
		got.Status.ObservedGeneration != 3 {
		t.Fatalf("%d status writes; Valid = %v, observedGeneration %d", statusWrites, v, got.Status.ObservedGeneration)
	}
}

// Where the Telemetry CRD is not installed, the other kinds' status is
// still written: the writer does not wait for the Telemetry informer.
func TestIstioWriterDoesNotWaitForTelemetryCRD(t *testing.T) {
	client := istiofake.NewSimpleClientset()
	client.PrependReactor("list", "telemetries", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(k8sschema.GroupResource{Group: "telemetry.istio.io", Resource: "telemetries"}, "")
	})
	w, ctx := newTelemetryWriter(t, client, nil)
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		t.Fatal("the networking informers never synced")
	}
	if w.factories[0].Telemetries().Informer().HasSynced() {
		t.Fatal("the Telemetry informer synced although listing fails")
	}
	if err := w.syncAll(ctx); err != nil {
		t.Fatalf("a pass without the Telemetry CRD: %v", err)
	}
}
