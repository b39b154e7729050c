package kube

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/test/logbuf"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const timeout = 20 * time.Second

type env struct {
	t         *testing.T
	client    *fake.Clientset
	c         *Controller
	pushes    chan *model.PushRequest
	logs      *logbuf.Buffer
	sentinels int
}

func newEnv(t *testing.T, tweak func(*Options, *fake.Clientset), objs ...runtime.Object) *env {
	t.Helper()
	e := &env{t: t, client: fake.NewClientset(objs...), pushes: make(chan *model.PushRequest, 1000), logs: &logbuf.Buffer{}}
	opts := Options{Client: kclienttest.Kube(e.client), Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if tweak != nil {
		tweak(&opts, e.client)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	c.AppendPushHandler(func(r *model.PushRequest) { e.pushes <- r })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-c.Synced():
	case <-time.After(timeout):
		t.Fatalf("registry did not sync; logs:\n%s", e.logs.String())
	}
	return e
}

// next returns the next push request.
func (e *env) next() *model.PushRequest {
	e.t.Helper()
	select {
	case r := <-e.pushes:
		return r
	case <-time.After(timeout):
		e.t.Fatalf("no push request within %v; logs:\n%s", timeout, e.logs.String())
	}
	return nil
}

// sentinel proves that the changes made before it asked for no push: a
// new Service travels the same queue, and its full push must come first.
func (e *env) sentinel() {
	e.t.Helper()
	e.sentinels++
	name := fmt.Sprintf("sentinel-%d", e.sentinels)
	e.apply(service("default", name, corev1.ServicePort{Name: "http", Port: 80}))
	r := e.next()
	if _, ok := r.ConfigsUpdated[ServiceKey("default", Hostname(name, "default", "cluster.local"))]; !ok || !r.Full {
		e.t.Fatalf("got push %+v before the sentinel", r)
	}
}

func (e *env) apply(obj runtime.Object) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	switch o := obj.(type) {
	case *corev1.Service:
		_, err = e.client.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = e.client.CoreV1().Services(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		}
	case *discoveryv1.EndpointSlice:
		_, err = e.client.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = e.client.DiscoveryV1().EndpointSlices(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		}
	case *corev1.Pod:
		_, err = e.client.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = e.client.CoreV1().Pods(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		}
	default:
		e.t.Fatalf("apply: unexpected %T", obj)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func reviewsSlice(readyV1 bool) *discoveryv1.EndpointSlice {
	return objects.EndpointSlice("default", "reviews", "reviews-abc", []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](9080)}},
		endpoint("10.1.0.1", "reviews-v1", readyV1, readyV1, false),
		endpoint("10.1.0.2", "reviews-v2", true, true, false))
}

func reviews() *corev1.Service {
	return service("default", "reviews", corev1.ServicePort{Name: "http", Port: 9080, TargetPort: intstr.FromString("http")})
}

func TestInitialSyncPublishesServicesWithPodLabels(t *testing.T) {
	e := newEnv(t, nil, reviews(), reviewsSlice(true),
		pod("default", "reviews-v1", map[string]string{"version": "v1"}), pod("default", "reviews-v2", map[string]string{"version": "v2"}))
	svcs := e.c.Services()
	if len(svcs) != 1 || svcs[0].Hostname != "reviews.default.svc.cluster.local" || len(svcs[0].Endpoints) != 2 {
		t.Fatalf("Services = %+v", svcs)
	}
	if svcs[0].Endpoints[0].Labels["version"] != "v1" || svcs[0].Endpoints[1].Labels["version"] != "v2" {
		t.Fatalf("pod labels missing: %+v %+v", svcs[0].Endpoints[0], svcs[0].Endpoints[1])
	}
	select {
	case r := <-e.pushes:
		t.Fatalf("push before sync was requested: %+v (the first push reads everything)", r)
	default:
	}
}

func TestChangesAreClassifiedFullOrEndpointsOnly(t *testing.T) {
	e := newEnv(t, nil, pod("default", "reviews-v1", map[string]string{"version": "v1"}), pod("default", "reviews-v2", map[string]string{"version": "v2"}))
	host := "reviews.default.svc.cluster.local"
	key := ServiceKey("default", host)

	e.apply(reviews())
	if r := e.next(); !r.Full || r.Reasons[ReasonService] != 1 {
		t.Fatalf("new service: %+v, want full", r)
	}
	e.apply(reviewsSlice(true))
	r := e.next()
	if r.Full || r.Reasons[ReasonEndpoint] != 1 {
		t.Fatalf("new endpoints: %+v, want endpoints-only", r)
	}
	if _, ok := r.ConfigsUpdated[key]; !ok {
		t.Fatalf("ConfigsUpdated = %v, want %v", r.ConfigsUpdated, key)
	}

	// A pod relabelled (a subset move) changes endpoints only.
	e.apply(pod("default", "reviews-v1", map[string]string{"version": "v1b"}))
	if r := e.next(); r.Full {
		t.Fatalf("pod relabel: %+v, want endpoints-only", r)
	}
	if got := e.c.Services()[0].Endpoints[0].Labels["version"]; got != "v1b" {
		t.Fatalf("label = %q", got)
	}
	// A pod label change that does not alter labels, and a pod nobody
	// selects, ask for nothing.
	e.apply(pod("default", "unrelated", map[string]string{"app": "x"}))
	e.sentinel()

	// A port change is a full push.
	svc := reviews()
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "grpc", Port: 9090})
	e.apply(svc)
	if r := e.next(); !r.Full {
		t.Fatalf("port change: %+v, want full", r)
	}
	// Deleting the service is a full push, and it is gone.
	if err := e.client.CoreV1().Services("default").Delete(context.Background(), "reviews", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := e.next(); !r.Full {
		t.Fatalf("delete: %+v, want full", r)
	}
	for _, s := range e.c.Services() {
		if s.Hostname == host {
			t.Fatal("deleted service still listed")
		}
	}
}

func TestCrashLoopingPodCausesNoFullPush(t *testing.T) {
	e := newEnv(t, nil, reviews(), reviewsSlice(true), pod("default", "reviews-v1", nil), pod("default", "reviews-v2", nil))
	before := e.c.Services()[0]
	const flips = 20
	for i := range flips {
		e.apply(reviewsSlice(i%2 == 1)) // v1 goes not-ready, ready, not-ready, ...
		r := e.next()
		if r.Full || r.Reasons[ReasonEndpoint] != 1 {
			t.Fatalf("flip %d: %+v, want endpoints-only", i, r)
		}
		want := 1
		if i%2 == 1 {
			want = 2
		}
		if n := len(e.c.Services()[0].Endpoints); n != want {
			t.Fatalf("flip %d: %d endpoints, want %d", i, n, want)
		}
	}
	e.sentinel()
	// Published services are never mutated: the snapshot taken before
	// the churn still has both endpoints.
	if len(before.Endpoints) != 2 {
		t.Fatalf("an earlier snapshot changed: %d endpoints", len(before.Endpoints))
	}
}

func TestForbiddenNamespaceIsReported(t *testing.T) {
	e := newEnv(t, func(o *Options, cs *fake.Clientset) {
		o.Namespaces = []string{"default", "secret"}
		cs.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "secret" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(k8sschema.GroupResource{Resource: a.GetResource().Resource}, "", fmt.Errorf("RBAC"))
		})
	}, reviews())
	if len(e.c.Services()) != 1 {
		t.Fatalf("allowed namespace not served: %+v", e.c.Services())
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 3 {
		t.Fatalf("want services, endpointslices and pods refused in secret, got %v", errs)
	}
	for _, err := range errs {
		if !strings.Contains(err.Message, `in namespace "secret"`) {
			t.Errorf("error does not name the namespace: %v", err)
		}
	}
}
