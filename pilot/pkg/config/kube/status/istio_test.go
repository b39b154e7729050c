package status

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	analysisv1alpha1 "istio.io/api/analysis/v1alpha1"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

func condition(s *metav1alpha1.IstioStatus, typ string) *metav1alpha1.IstioCondition {
	c := findCondition(s, typ)
	if c == nil {
		return &metav1alpha1.IstioCondition{}
	}
	return c
}

func TestComputeReconciled(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name          string
		st            *model.ObjectState
		status, rsn   string
		msgSubstrings []string
	}{
		{"unused", nil, "True", "NoGateways", []string{"no connected gateway"}},
		{"pending", &model.ObjectState{Gateways: 3, Acked: 1}, "False", "Pending", []string{"1 of 3 gateways have ACKed"}},
		{"acked", &model.ObjectState{Gateways: 2, Acked: 2}, "True", "Reconciled", []string{"all 2 gateways"}},
		{"nacked", &model.ObjectState{Gateways: 3, Acked: 1, Nacked: 2, FirstNack: "duplicate listener"}, "False", "Rejected",
			[]string{"2 of 3 gateways rejected", "duplicate listener"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Compute(tc.st, 7, nil, now)
			c := condition(s, ConditionReconciled)
			if c.Status != tc.status || c.Reason != tc.rsn || c.ObservedGeneration != 7 || s.ObservedGeneration != 7 {
				t.Fatalf("Reconciled = %v, want status %s reason %s generation 7", c, tc.status, tc.rsn)
			}
			for _, sub := range tc.msgSubstrings {
				if !strings.Contains(c.Message, sub) {
					t.Errorf("message %q lacks %q", c.Message, sub)
				}
			}
		})
	}
}

func TestComputeValidationMessages(t *testing.T) {
	key := config.Key{Kind: schema.VirtualService, Namespace: "default", Name: "vs"}
	st := &model.ObjectState{Errors: []*config.Error{
		{Key: key, Field: "spec.http[0].route[0].destination.subset", Message: `subset "v9" is not defined by any DestinationRule for host a.default.svc.cluster.local`},
		{Key: key, Field: "spec.http[1]", Message: "never matches on port 80: spec.http[0] before it matches every request; dropped", Warning: true},
		{Key: key, Field: "spec.hosts", Message: "host a.example.com on port 80 is also bound by VirtualService default/other, which comes first", Warning: true},
		{Key: key, Field: "spec.http[0].retries.retryOn", Message: `unknown retry condition "x"`},
	}}
	s := Compute(st, 1, nil, time.Unix(0, 0))
	want := []struct {
		code  string
		level analysisv1alpha1.AnalysisMessageBase_Level
	}{
		{"IST0101", analysisv1alpha1.AnalysisMessageBase_ERROR},
		{"IST0130", analysisv1alpha1.AnalysisMessageBase_WARNING},
		{"IST0109", analysisv1alpha1.AnalysisMessageBase_WARNING},
		{"IST0106", analysisv1alpha1.AnalysisMessageBase_ERROR},
	}
	if len(s.ValidationMessages) != len(want) {
		t.Fatalf("validationMessages = %v, want %d", s.ValidationMessages, len(want))
	}
	for i, w := range want {
		m := s.ValidationMessages[i]
		if m.GetType().GetCode() != w.code || m.GetLevel() != w.level {
			t.Errorf("message %d = %v, want %s %v", i, m, w.code, w.level)
		}
		if !strings.HasSuffix(m.GetDocumentationUrl(), "/"+strings.ToLower(w.code)+"/") {
			t.Errorf("message %d documentation = %q", i, m.GetDocumentationUrl())
		}
	}
	v := condition(s, ConditionValid)
	if v.Status != "False" || v.Reason != "Invalid" ||
		!strings.Contains(v.Message, "2 errors: spec.http[0].route[0].destination.subset: subset \"v9\"") ||
		!strings.Contains(v.Message, "2 warnings: spec.http[1]: never matches") {
		t.Errorf("Valid = %v", v)
	}
	ok := Compute(&model.ObjectState{Errors: st.Errors[1:2]}, 1, nil, time.Unix(0, 0))
	if v := condition(ok, ConditionValid); v.Status != "True" || v.Reason != "Warnings" {
		t.Errorf("warnings only: Valid = %v, want True/Warnings", v)
	}
}

func TestComputeKeepsTransitionTimeWhileStatusHolds(t *testing.T) {
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	first := Compute(&model.ObjectState{Gateways: 1}, 1, nil, t0)
	same := Compute(&model.ObjectState{Gateways: 1}, 1, first, t1)
	if !Equal(first, same) {
		t.Fatalf("an unchanged state computed a different status:\n%v\n%v", first, same)
	}
	flipped := Compute(&model.ObjectState{Gateways: 1, Acked: 1}, 1, first, t1)
	if got := condition(flipped, ConditionReconciled).LastTransitionTime.AsTime(); !got.Equal(t1) {
		t.Errorf("Reconciled turned True at %v, want %v", got, t1)
	}
	if got := condition(flipped, ConditionValid).LastTransitionTime.AsTime(); !got.Equal(t0) {
		t.Errorf("Valid kept its status but moved to %v, want %v", got, t0)
	}
}

func TestBucket(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBucket(clk, 2, 3)
	for i := range 3 {
		if !b.take() {
			t.Fatalf("take %d of the burst refused", i)
		}
	}
	if b.take() {
		t.Fatal("a fourth take without time passing was allowed")
	}
	clk.Step(500 * time.Millisecond) // one token at 2/s
	if !b.take() || b.take() {
		t.Fatal("after 0.5s at 2/s want exactly one token")
	}
	clk.Step(time.Hour)
	n := 0
	for b.take() {
		n++
	}
	if n != 3 {
		t.Fatalf("after an hour %d tokens, want the burst of 3", n)
	}
}

// istioEnv is a fake API server with VirtualServices and a counter of
// status writes.
type istioEnv struct {
	client *istiofake.Clientset
	clock  *clocktesting.FakeClock
	w      *IstioWriter

	mu      sync.Mutex
	state   map[config.Key]*model.ObjectState
	updates int
}

func newIstioEnv(t *testing.T, qps float64, burst int, names ...string) *istioEnv {
	t.Helper()
	var objs []runtime.Object
	for _, n := range names {
		objs = append(objs, &networkingv1.VirtualService{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n, Generation: 1}})
	}
	e := &istioEnv{client: istiofake.NewSimpleClientset(objs...), clock: clocktesting.NewFakeClock(time.Unix(5000, 0)),
		state: map[config.Key]*model.ObjectState{}}
	e.client.PrependReactor("update", "virtualservices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			t.Errorf("wrote more than status: %v", a)
		}
		e.mu.Lock()
		e.updates++
		e.mu.Unlock()
		return false, nil, nil
	})
	w, err := NewIstio(IstioOptions{
		Kube: kclienttest.Kube(fake.NewClientset()), Istio: kclienttest.Istio(e.client), LeaseNamespace: "wayfinder", Identity: "pod-a",
		State: func() map[config.Key]*model.ObjectState {
			e.mu.Lock()
			defer e.mu.Unlock()
			out := map[config.Key]*model.ObjectState{}
			for k, v := range e.state {
				cp := *v
				out[k] = &cp
			}
			return out
		},
		QPS: qps, Burst: burst, Clock: e.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		for _, f := range w.factories {
			f.Shutdown()
		}
	})
	for _, f := range w.factories {
		f.Start(ctx.Done())
		f.WaitForCacheSync(ctx.Done())
	}
	e.w = w
	return e
}

func (e *istioEnv) set(name string, st model.ObjectState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state[config.Key{Kind: schema.VirtualService, Namespace: "default", Name: name}] = &st
}

func (e *istioEnv) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.updates
}

// sync runs one pass and returns the writes it made.
func (e *istioEnv) sync(t *testing.T) int {
	t.Helper()
	before := e.count()
	if err := e.w.syncAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e.count() - before
}

// waitCached waits until the writer's cache holds the status with the
// Reconciled reason of every named VirtualService.
func (e *istioEnv) waitCached(t *testing.T, reason string, names ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range names {
		for {
			vs, err := e.w.listers[0].vs.VirtualServices("default").Get(n)
			if err == nil && condition(&vs.Status, ConditionReconciled).Reason == reason {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cache never saw reason %s on %s", reason, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestIstioWriterWritesOncePerChange(t *testing.T) {
	e := newIstioEnv(t, 100, 100, "vs")
	e.set("vs", model.ObjectState{Gateways: 1})
	if n := e.sync(t); n != 1 {
		t.Fatalf("first pass wrote %d times, want 1", n)
	}
	// Before the cache has seen the write, a pass must not repeat it.
	if n := e.sync(t); n != 0 {
		t.Fatalf("pass before the cache caught up wrote %d times, want 0", n)
	}
	e.waitCached(t, "Pending", "vs")
	e.clock.Step(time.Minute)
	if n := e.sync(t); n != 0 {
		t.Fatalf("unchanged state wrote %d times, want 0", n)
	}
	e.set("vs", model.ObjectState{Gateways: 1, Acked: 1})
	if n := e.sync(t); n != 1 {
		t.Fatalf("changed state wrote %d times, want 1", n)
	}
	e.waitCached(t, "Reconciled", "vs")
	vs, err := e.client.NetworkingV1().VirtualServices("default").Get(context.Background(), "vs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(&vs.Status, ConditionReconciled); c.Status != "True" || c.ObservedGeneration != 1 {
		t.Errorf("stored Reconciled = %v", c)
	}
	if e.w.Writes() != 2 {
		t.Errorf("Writes() = %d, want 2", e.w.Writes())
	}
}

func TestIstioWriterRateLimitsAndCoalesces(t *testing.T) {
	var names []string
	for i := range 5 {
		names = append(names, fmt.Sprintf("vs%d", i))
	}
	e := newIstioEnv(t, 1, 2, names...)
	for _, n := range names {
		e.set(n, model.ObjectState{Gateways: 1})
	}
	if n := e.sync(t); n != 2 {
		t.Fatalf("first pass wrote %d, want the burst of 2", n)
	}
	if n := e.sync(t); n != 0 {
		t.Fatalf("pass without time passing wrote %d, want 0", n)
	}
	// Meanwhile every gateway ACKs: the objects not written yet get the
	// latest status in one write each, never the intermediate one.
	for _, n := range names {
		e.set(n, model.ObjectState{Gateways: 1, Acked: 1})
	}
	e.clock.Step(time.Second)
	if n := e.sync(t); n != 1 {
		t.Fatalf("after 1s at 1/s wrote %d, want 1", n)
	}
	e.clock.Step(time.Hour)
	if n := e.sync(t); n != 2 {
		t.Fatalf("after refill wrote %d, want 2 (burst)", n)
	}
	e.clock.Step(time.Hour)
	if n := e.sync(t); n != 2 {
		t.Fatalf("after second refill wrote %d, want the last 2", n)
	}
	e.waitCached(t, "Reconciled", names...)
	e.clock.Step(time.Hour)
	if n := e.sync(t); n != 0 {
		t.Fatalf("all current: wrote %d, want 0", n)
	}
	if got := e.count(); got != 7 {
		t.Errorf("%d writes for 5 objects (2 pending then reconciled, 3 straight to reconciled), want 7", got)
	}
}
