package generated

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// A refused watch counts as synced (so the first push does not wait for
// it) and stands in ConfigErrors, sorted with the conversion's errors.
func TestWatchesDeniedIsSyncedAndReported(t *testing.T) {
	client := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "svc"}})
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: "secrets"}, "", nil)
	})
	f := informers.NewSharedInformerFactory(client, 0)
	changes := make(chan struct{}, 10)
	w := Watches{Name: "test"}
	if err := w.Register("Services in "+NamespaceName(""), f.Core().V1().Services().Informer(), OnAny(func() { changes <- struct{}{} })); err != nil {
		t.Fatal(err)
	}
	if err := w.Register("Secrets in "+NamespaceName("a"), f.Core().V1().Secrets().Informer(), OnAny(func() {})); err != nil {
		t.Fatal(err)
	}
	if w.Synced() {
		t.Fatal("Synced before the informers started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	if !w.WaitSynced(waitCtx, clock.RealClock{}) {
		t.Fatal("not synced within 10s with one watch refused")
	}
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("the Service add never reached the handler")
	}

	var s Set
	s.Replace(nil, []*config.Error{{Source: "Ingress a/x", Message: "bad"}})
	errs := ConfigErrors(&s, &w)
	if len(errs) != 2 {
		t.Fatalf("ConfigErrors = %v, want the conversion error and the refused watch", errs)
	}
	if errs[0].Source != "Ingress a/x" || errs[1].Source != "Kubernetes watch of Secrets in namespace a" ||
		!strings.Contains(errs[1].Message, "forbidden by RBAC") {
		t.Fatalf("ConfigErrors = %q, %q; want sorted by source, the watch named", errs[0].Source, errs[1].Source)
	}
	if d := w.Denied(); len(d) != 1 {
		t.Fatalf("Denied = %v, want only the Secrets watch", d)
	}
}

func TestWaitSyncedStopsWithContext(t *testing.T) {
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0) // never started
	w := Watches{Name: "test"}
	if err := w.Register("Services", f.Core().V1().Services().Informer(), OnAny(func() {})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w.WaitSynced(ctx, clock.RealClock{}) {
		t.Fatal("WaitSynced reported synced for an informer never started")
	}
}

func TestNamespaceName(t *testing.T) {
	if got := NamespaceName(""); got != "all namespaces" {
		t.Fatalf(`NamespaceName("") = %q`, got)
	}
	if got := NamespaceName("a"); got != "namespace a" {
		t.Fatalf(`NamespaceName("a") = %q`, got)
	}
}
