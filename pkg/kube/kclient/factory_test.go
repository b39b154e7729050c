package kclient_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// TestFactoryStartsSharesAndStopsInformers: one informer per kind however
// often it is asked for, a namespace and a label selector applied to lists
// and watches, sync, managedFields and kubectl's last-applied copy left out
// of the cache (other annotations kept), an event after
// sync, and nothing left running after Shutdown.
func TestFactoryStartsSharesAndStopsInformers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc := func(ns, name string, lbl map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl}}
	}
	web := svc("a", "web", map[string]string{"app": "web"})
	web.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	web.Annotations = map[string]string{kclient.LastAppliedAnnotation: `{"kind":"Service"}`, "networking.istio.io/exportTo": "."}
	cs := fake.NewClientset(web, svc("a", "db", nil), svc("b", "web", map[string]string{"app": "web"}))
	f := kclient.NewKubeFactory(kclienttest.Kube(cs), 0, "a", func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	if f.Services().Informer() != f.Services().Informer() {
		t.Fatal("two informers for one kind")
	}
	stop := make(chan struct{})
	f.Start(stop)
	synced := f.WaitForCacheSync(stop)
	if len(synced) != 1 {
		t.Fatalf("synced %v, want one kind", synced)
	}
	for typ, ok := range synced {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	got, err := f.Services().Lister().List(labels.Everything())
	if err != nil || len(got) != 1 || got[0].Namespace != "a" || got[0].Name != "web" {
		t.Fatalf("listed %v (%v), want a/web alone", got, err)
	}
	if got[0].ManagedFields != nil {
		t.Errorf("the cache keeps managedFields: %v", got[0].ManagedFields)
	}
	if want := map[string]string{"networking.istio.io/exportTo": "."}; !maps.Equal(got[0].Annotations, want) {
		t.Errorf("cached annotations %v, want %v (kubectl's last-applied copy dropped, the rest kept)", got[0].Annotations, want)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Services("a").Create(ctx, svc("a", "api", map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a Service created after sync to reach the cache", func() bool {
		_, err := f.Services().Lister().Services("a").Get("api")
		return err == nil
	}, poll.Timeout(10*time.Second), poll.Interval(10*time.Millisecond))
	f.Shutdown()
	close(stop)
	f.Start(stop) // after Shutdown: nothing starts
}
