package status

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ing(name, class string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       networkingv1.IngressSpec{IngressClassName: ptr.To(class)},
	}
}

func class(name, controller string) *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
}

func gatewayService(lb ...corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istio-ingressgateway"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10", ExternalIPs: []string{"192.0.2.1"}},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: lb}},
	}
}

// env is a fake API server and what the writer did to it.
type env struct {
	client *fake.Clientset
	// updates receives every Ingress status written.
	updates chan *networkingv1.Ingress
	// leaseGets receives every read of the Lease.
	leaseGets chan struct{}

	mu        sync.Mutex
	specWrite bool
	failNext  int
}

func newEnv(t *testing.T, objs ...runtime.Object) *env {
	e := &env{client: fake.NewClientset(objs...), updates: make(chan *networkingv1.Ingress, 100), leaseGets: make(chan struct{}, 1000)}
	e.client.PrependReactor("update", "ingresses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if a.GetSubresource() != "status" {
			e.specWrite = true
			return false, nil, nil
		}
		obj := a.(k8stesting.UpdateAction).GetObject().(*networkingv1.Ingress).DeepCopy()
		if e.failNext > 0 {
			e.failNext--
			e.updates <- nil // a failed attempt
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, obj.Name, nil)
		}
		e.updates <- obj
		return false, nil, nil
	})
	e.client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case e.leaseGets <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	return e
}

func (e *env) writer(t *testing.T, identity string, opts Options) *Writer {
	opts.Client = kclienttest.Kube(e.client)
	opts.LeaseNamespace, opts.Identity = "wayfinder-system", identity
	opts.Ingress = ingress.Options{IngressClass: "wayfinder"}
	// Short real timings: leader election runs on the real clock.
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 2*time.Second, time.Second, 20*time.Millisecond
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// run starts w and returns a stop function that waits for it.
func (e *env) run(t *testing.T, w *Writer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// next waits for the next status write (nil for a failed one).
func (e *env) next(t *testing.T) *networkingv1.Ingress {
	t.Helper()
	select {
	case u := <-e.updates:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no status update within 10s")
		return nil
	}
}

func ips(addrs ...string) []networkingv1.IngressLoadBalancerIngress {
	var out []networkingv1.IngressLoadBalancerIngress
	for _, a := range addrs {
		out = append(out, networkingv1.IngressLoadBalancerIngress{IP: a})
	}
	return out
}

func TestLeaderWritesStatusOfHandledIngresses(t *testing.T) {
	e := newEnv(t,
		class("ours", ingress.ControllerName), class("nginx", "k8s.io/ingress-nginx"),
		ing("mine", "ours"), ing("theirs", "nginx"),
		gatewayService(corev1.LoadBalancerIngress{IP: "203.0.113.7"}, corev1.LoadBalancerIngress{Hostname: "lb.example.com"}))
	w := e.writer(t, "pod-a", Options{})
	stop := e.run(t, w)

	want := append(ips("192.0.2.1", "203.0.113.7"), networkingv1.IngressLoadBalancerIngress{Hostname: "lb.example.com"})
	u := e.next(t)
	if u.Name != "mine" || !reflect.DeepEqual(u.Status.LoadBalancer.Ingress, want) {
		t.Fatalf("first write %s: %v, want mine: %v", u.Name, u.Status.LoadBalancer.Ingress, want)
	}
	if !w.IsLeader() {
		t.Error("writing without leading")
	}

	// The gateway Service changes: status follows.
	svc := gatewayService(corev1.LoadBalancerIngress{IP: "203.0.113.8"})
	if _, err := e.client.CoreV1().Services("istio-system").UpdateStatus(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := e.next(t); u.Name != "mine" || !reflect.DeepEqual(u.Status.LoadBalancer.Ingress, ips("192.0.2.1", "203.0.113.8")) {
		t.Fatalf("after the Service changed: %s %v", u.Name, u.Status.LoadBalancer.Ingress)
	}

	// A new Ingress selected by the legacy annotation gets status too.
	legacy := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "legacy",
		Annotations: map[string]string{ingress.ClassAnnotation: "wayfinder"}}}
	if _, err := e.client.NetworkingV1().Ingresses("web").Create(context.Background(), legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := e.next(t); u.Name != "legacy" || !reflect.DeepEqual(u.Status.LoadBalancer.Ingress, ips("192.0.2.1", "203.0.113.8")) {
		t.Fatalf("new Ingress: %s %v", u.Name, u.Status.LoadBalancer.Ingress)
	}
	stop()

	// Every pass covers all Ingresses, so "theirs" would have been written
	// by now; and the spec was never written.
	for len(e.updates) > 0 {
		if u := <-e.updates; u != nil && u.Name == "theirs" {
			t.Error("another controller's Ingress was written")
		}
	}
	if e.specWrite {
		t.Error("an Ingress spec was updated; only the status subresource may be")
	}
	got, err := e.client.NetworkingV1().Ingresses("default").Get(context.Background(), "theirs", metav1.GetOptions{})
	if err != nil || len(got.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("theirs: %v %v", got.Status, err)
	}
	// Stopping released the Lease for the next replica.
	lease, err := e.client.CoordinationV1().Leases("wayfinder-system").Get(context.Background(), "wayfinder-ingress-status", metav1.GetOptions{})
	if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") != "" {
		t.Errorf("lease after stop: %+v %v", lease.Spec, err)
	}
}

// A replica that does not hold the Lease writes nothing; once the Lease
// is free it takes over and writes.
func TestOnlyTheLeaderWrites(t *testing.T) {
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "wayfinder-system", Name: "wayfinder-ingress-status"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-other"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	e := newEnv(t, class("ours", ingress.ControllerName), ing("mine", "ours"), gatewayService(corev1.LoadBalancerIngress{IP: "203.0.113.7"}), held)
	w := e.writer(t, "pod-b", Options{})
	stop := e.run(t, w)
	defer stop()

	// Three tries at the Lease, all refused: nothing written meanwhile.
	for range 3 {
		select {
		case <-e.leaseGets:
		case <-time.After(10 * time.Second):
			t.Fatal("the writer never tried the Lease")
		}
	}
	if len(e.updates) != 0 || w.IsLeader() {
		t.Fatalf("a follower wrote status (%d writes, leader %v)", len(e.updates), w.IsLeader())
	}

	if err := e.client.CoordinationV1().Leases("wayfinder-system").Delete(context.Background(), held.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := e.next(t); u.Name != "mine" || !reflect.DeepEqual(u.Status.LoadBalancer.Ingress, ips("192.0.2.1", "203.0.113.7")) {
		t.Fatalf("after taking the Lease: %s %v", u.Name, u.Status.LoadBalancer.Ingress)
	}
}

// afterClock is a fake clock that says when the writer starts waiting.
type afterClock struct {
	*clocktesting.FakeClock
	waiting chan time.Duration
}

// NewTicker paces the wait for the informers' sync, which this test does
// not drive: it runs on real time.
func (c afterClock) NewTicker(d time.Duration) clock.Ticker { return clock.RealClock{}.NewTicker(d) }

func (c afterClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.waiting <- d
	return ch
}

func TestFailedWriteIsRetried(t *testing.T) {
	e := newEnv(t, class("ours", ingress.ControllerName), ing("mine", "ours"), gatewayService(corev1.LoadBalancerIngress{IP: "203.0.113.7"}))
	e.failNext = 1
	clk := afterClock{FakeClock: clocktesting.NewFakeClock(time.Unix(0, 0)), waiting: make(chan time.Duration, 1)}
	w := e.writer(t, "pod-a", Options{Clock: clk, RetryDelay: time.Minute})
	stop := e.run(t, w)
	defer stop()

	if u := e.next(t); u != nil {
		t.Fatalf("first write should have failed, got %v", u)
	}
	if d := <-clk.waiting; d != time.Minute {
		t.Fatalf("retry after %v, want 1m", d)
	}
	if len(e.updates) != 0 {
		t.Fatal("retried before the delay")
	}
	clk.Step(time.Minute)
	if u := e.next(t); u == nil || u.Name != "mine" {
		t.Fatalf("retry: %v", u)
	}
}

func TestAddresses(t *testing.T) {
	cases := []struct {
		name string
		svc  *corev1.Service
		want []networkingv1.IngressLoadBalancerIngress
	}{
		{"load balancer and external IPs, sorted, deduplicated",
			&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", ExternalIPs: []string{"198.51.100.2", "203.0.113.1"}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
					{Hostname: "b.example.com"}, {IP: "203.0.113.1"}, {Hostname: "a.example.com"}, {IP: "2001:db8::1"}}}}},
			[]networkingv1.IngressLoadBalancerIngress{{IP: "198.51.100.2"}, {IP: "2001:db8::1"}, {IP: "203.0.113.1"}, {Hostname: "a.example.com"}, {Hostname: "b.example.com"}}},
		{"cluster IP when nothing else", &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1"}}, ips("10.0.0.1")},
		{"headless has none", &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "None"}}, nil},
		{"external name", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "gw.example.com"}},
			[]networkingv1.IngressLoadBalancerIngress{{Hostname: "gw.example.com"}}},
	}
	for _, tc := range cases {
		if got := Addresses(tc.svc); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewRequiresIdentity(t *testing.T) {
	e := newEnv(t)
	if _, err := New(Options{Client: kclienttest.Kube(e.client)}); err == nil {
		t.Error("missing lease namespace and identity accepted")
	}
	if _, err := New(Options{LeaseNamespace: "ns", Identity: "pod"}); err == nil {
		t.Error("missing client accepted")
	}
}

// A namespace the RBAC forbids is logged and treated as empty: the writer
// still leads and writes the Ingresses it may read.
func TestForbiddenNamespaceDoesNotBlock(t *testing.T) {
	e := newEnv(t, class("ours", ingress.ControllerName), ing("mine", "ours"), gatewayService(corev1.LoadBalancerIngress{IP: "203.0.113.7"}))
	e.client.PrependReactor("list", "ingresses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "locked" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, "", nil)
		}
		return false, nil, nil
	})
	w := e.writer(t, "pod-a", Options{Namespaces: []string{"default", "locked"}})
	stop := e.run(t, w)
	defer stop()
	if u := e.next(t); u == nil || u.Name != "mine" {
		t.Fatalf("write %v", u)
	}
}
