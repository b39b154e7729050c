package meshwatch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

func meshConfigMap(name, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "wayfinder", Name: name}, Data: map[string]string{"mesh": data}}
}

func TestConfigMapWatch(t *testing.T) {
	cs := fake.NewClientset(meshConfigMap("istio", "rootNamespace: first\n"), meshConfigMap("other", "rootNamespace: other\n"))
	tracker := NewTracker(mesh.NewHolder(mesh.HolderOptions{}), nil, nil)
	w, err := NewConfigMap(ConfigMapOptions{Client: kclienttest.Kube(cs), Namespace: "wayfinder", Tracker: tracker})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	root := func() string { return tracker.Current().Mesh.GetRootNamespace() }
	poll.Until(t, "the synced ConfigMap", func() bool { return w.HasSynced() && root() == "first" })
	if got, want := tracker.Current().Source, mesh.ConfigMapSource("wayfinder", "istio"); got != want {
		t.Fatalf("source = %v, want %v", got, want)
	}
	cms := cs.CoreV1().ConfigMaps("wayfinder")

	if _, err := cms.Update(ctx, meshConfigMap("istio", "rootNamespace: second\n"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the update", func() bool { return root() == "second" })

	if _, err := cms.Update(ctx, meshConfigMap("istio", "enableTracing: maybe\n"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the refusal", func() bool { return tracker.LastError() != nil })
	if msg := tracker.LastError().Err.Error(); root() != "second" || !strings.Contains(msg, "ConfigMap wayfinder/istio key mesh") || !strings.Contains(msg, "enableTracing") {
		t.Fatalf("root %q, error %q; want second kept and an error naming the ConfigMap and field", root(), msg)
	}

	if err := cms.Delete(ctx, "istio", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Holder takes the defaults before the Tracker clears the error:
	// both are awaited.
	poll.Until(t, "istiod's defaults once the ConfigMap is gone, the error cleared", func() bool {
		return root() == mesh.DefaultRootNamespace && tracker.LastError() == nil
	})
	if got := tracker.Current().Source; got != (mesh.Source{}) {
		t.Fatalf("after deletion: source %v, want the defaults'", got)
	}
}

// RBAC refusing the watch costs the mesh config (istiod's defaults), not
// the server's readiness.
func TestConfigMapWatchForbiddenCountsAsSynced(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no Role"))
	})
	tracker := NewTracker(mesh.NewHolder(mesh.HolderOptions{}), nil, nil)
	w, err := NewConfigMap(ConfigMapOptions{Client: kclienttest.Kube(cs), Namespace: "wayfinder", Tracker: tracker})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	poll.Until(t, "synced despite the refusal", w.HasSynced)
	if got := tracker.Current().Mesh.GetRootNamespace(); got != mesh.DefaultRootNamespace {
		t.Fatalf("rootNamespace = %q, want istiod's default", got)
	}
}
