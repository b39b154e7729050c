package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

const (
	leaseNS   = "wayfinder-system"
	leaseName = "test-lease"
)

// Timings of the tests below. held never expires within a test, so a
// candidate can only take over by release; quick expires in a second.
var (
	held  = leaseConfig{LeaseDuration: time.Hour, RenewDeadline: time.Minute, RetryPeriod: 10 * time.Millisecond}
	quick = leaseConfig{LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 20 * time.Millisecond}
)

// leaseCluster is a fake API server whose Leases keep resourceVersions
// and refuse a write based on an old one, as the real one does.
type leaseCluster struct {
	cs *fake.Clientset
	rv atomic.Int64
}

func newLeaseCluster() *leaseCluster {
	c := &leaseCluster{cs: fake.NewClientset()}
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	// The fake runs one reaction at a time, so read-compare-write is atomic.
	c.cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.ResourceVersion = strconv.FormatInt(c.rv.Add(1), 10)
		if err := c.cs.Tracker().Create(gvr, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l, nil
	})
	c.cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := c.cs.Tracker().Get(gvr, l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, errors.New("the object has been modified"))
		}
		l.ResourceVersion = strconv.FormatInt(c.rv.Add(1), 10)
		if err := c.cs.Tracker().Update(gvr, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l, nil
	})
	return c
}

func (c *leaseCluster) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := c.cs.CoordinationV1().Leases(leaseNS).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// replica is one candidate's access to the API server: it counts its
// reads of the Lease, and its Lease calls fail while it is cut off.
type replica struct {
	kclient.Kube
	reads atomic.Int64
	cut   atomic.Bool
}

func (r *replica) CoordinationV1() kclient.CoordinationV1 { return replicaCoordination{r} }

type replicaCoordination struct{ r *replica }

func (c replicaCoordination) Leases(ns string) kclient.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return replicaLeases{Resource: c.r.Kube.CoordinationV1().Leases(ns), r: c.r}
}

type replicaLeases struct {
	kclient.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	r *replica
}

var errCut = errors.New("connection refused (cut off by the test)")

func (l replicaLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	l.r.reads.Add(1)
	if l.r.cut.Load() {
		return nil, errCut
	}
	return l.Resource.Get(ctx, name, opts)
}

func (l replicaLeases) Create(ctx context.Context, obj *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if l.r.cut.Load() {
		return nil, errCut
	}
	return l.Resource.Create(ctx, obj, opts)
}

func (l replicaLeases) Update(ctx context.Context, obj *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if l.r.cut.Load() {
		return nil, errCut
	}
	return l.Resource.Update(ctx, obj, opts)
}

// candidate runs campaign as one replica; its lead reports every term.
type candidate struct {
	*replica
	started, ended chan struct{}
	leading        atomic.Bool
	stop           func()
}

func (c *leaseCluster) candidate(t *testing.T, identity string, timings leaseConfig) *candidate {
	cfg := timings
	r := &replica{Kube: kclienttest.Kube(c.cs)}
	cfg.Client, cfg.Namespace, cfg.Name, cfg.Identity = r, leaseNS, leaseName, identity
	cfg.What, cfg.Logger = "test status", slog.New(slog.DiscardHandler)
	cd := &candidate{replica: r, started: make(chan struct{}, 10), ended: make(chan struct{}, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- campaign(ctx, cfg, func(ctx context.Context) {
			cd.leading.Store(true)
			cd.started <- struct{}{}
			<-ctx.Done()
			cd.leading.Store(false)
			cd.ended <- struct{}{}
		})
	}()
	var once sync.Once
	cd.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("campaign %s: %v", identity, err)
			}
		})
	}
	t.Cleanup(cd.stop)
	return cd
}

// await waits for a report of the candidate's, failing after 10s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

// awaitReads waits until the candidate has read the Lease n more times
// (each read is a try).
func (c *candidate) awaitReads(t *testing.T, n int64) {
	t.Helper()
	want := c.reads.Load() + n
	deadline := time.Now().Add(10 * time.Second)
	for c.reads.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the candidate did not try the Lease %d times within 10s", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func checkLease(t *testing.T, l *coordinationv1.Lease, holder string, seconds, transitions int32) {
	t.Helper()
	if got := ptr.Deref(l.Spec.HolderIdentity, "<nil>"); got != holder {
		t.Errorf("holderIdentity = %s, want %q", got, holder)
	}
	if got := ptr.Deref(l.Spec.LeaseDurationSeconds, -1); got != seconds {
		t.Errorf("leaseDurationSeconds = %d, want %d", got, seconds)
	}
	if got := ptr.Deref(l.Spec.LeaseTransitions, -1); got != transitions {
		t.Errorf("leaseTransitions = %d, want %d", got, transitions)
	}
	if l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil || l.Spec.RenewTime.Before(l.Spec.AcquireTime) {
		t.Errorf("acquireTime %v, renewTime %v", l.Spec.AcquireTime, l.Spec.RenewTime)
	}
}

// A Lease that does not exist is created by the first candidate, which
// renews it while leading and clears it when stopped.
func TestLeaseAcquiredWhenAbsent(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", held)
	await(t, a.started, "pod-a leading")
	first := c.lease(t)
	checkLease(t, first, "pod-a", 3600, 0)

	// Renewed: a new renewTime, the same acquireTime.
	deadline := time.Now().Add(10 * time.Second)
	for l := c.lease(t); l.ResourceVersion == first.ResourceVersion; l = c.lease(t) {
		if time.Now().After(deadline) {
			t.Fatal("the Lease was not renewed within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	renewed := c.lease(t)
	checkLease(t, renewed, "pod-a", 3600, 0)
	if !renewed.Spec.AcquireTime.Equal(first.Spec.AcquireTime) || !first.Spec.RenewTime.Before(renewed.Spec.RenewTime) {
		t.Errorf("renewal: acquireTime %v -> %v, renewTime %v -> %v", first.Spec.AcquireTime, renewed.Spec.AcquireTime,
			first.Spec.RenewTime, renewed.Spec.RenewTime)
	}

	a.stop()
	if a.leading.Load() || len(a.ended) != 1 {
		t.Error("lead did not return before campaign")
	}
	checkLease(t, c.lease(t), "", 1, 0)
}

// A second candidate does not lead while the holder renews; when the
// holder stops, its release lets the second take over at once, long
// before the Lease would expire.
func TestLeaseReleasedOnCancelIsTakenOverAtOnce(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", held)
	await(t, a.started, "pod-a leading")
	b := c.candidate(t, "pod-b", held)
	b.awaitReads(t, 5)
	if b.leading.Load() || len(b.started) != 0 {
		t.Fatal("pod-b leads while pod-a holds the Lease")
	}
	checkLease(t, c.lease(t), "pod-a", 3600, 0)

	a.stop()
	await(t, b.started, "pod-b leading after pod-a's release")
	checkLease(t, c.lease(t), "pod-b", 3600, 1)
}

// A holder that stops renewing (cut off from the API server) stops
// leading after RenewDeadline, and the other candidate takes over once
// the Lease has not changed for its duration.
func TestLeaseTakenOverWhenHolderStopsRenewing(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", quick)
	await(t, a.started, "pod-a leading")
	b := c.candidate(t, "pod-b", quick)
	b.awaitReads(t, 3)
	a.cut.Store(true)

	await(t, a.ended, "pod-a stopping after its renew deadline")
	await(t, b.started, "pod-b taking over the expired Lease")
	checkLease(t, c.lease(t), "pod-b", 1, 1)

	// pod-a, back in touch, finds the Lease renewed by pod-b.
	a.cut.Store(false)
	a.awaitReads(t, 5)
	if a.leading.Load() || !b.leading.Load() {
		t.Fatalf("after pod-a is back: pod-a leading %v, pod-b leading %v", a.leading.Load(), b.leading.Load())
	}
}

// A Lease someone else overwrote is lost: the renewal conflicts, lead is
// stopped, and the Lease is neither released nor retaken while the other
// holder's record is valid.
func TestLostLeaseStopsLead(t *testing.T) {
	c := newLeaseCluster()
	timings := quick
	timings.LeaseDuration = time.Hour
	a := c.candidate(t, "pod-a", timings)
	await(t, a.started, "pod-a leading")

	l := c.lease(t)
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("pod-other"), ptr.To[int32](3600)
	l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &now, &now, ptr.To[int32](7)
	if _, err := c.cs.CoordinationV1().Leases(leaseNS).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	await(t, a.ended, "pod-a stopping after losing the Lease")
	a.awaitReads(t, 5)
	if a.leading.Load() || len(a.started) != 0 {
		t.Fatal("pod-a leads again while pod-other holds the Lease")
	}
	a.stop()
	checkLease(t, c.lease(t), "pod-other", 3600, 7)
}

func TestCampaignRejectsBadTimings(t *testing.T) {
	for _, tc := range []leaseConfig{
		{LeaseDuration: time.Second, RenewDeadline: time.Second, RetryPeriod: 10 * time.Millisecond},
		{LeaseDuration: time.Minute, RenewDeadline: time.Second, RetryPeriod: time.Second},
		{LeaseDuration: time.Minute, RenewDeadline: time.Second},
	} {
		tc.Client = kclienttest.Kube(fake.NewClientset())
		err := campaign(context.Background(), tc, func(context.Context) { t.Error("led") })
		if err == nil {
			t.Errorf("%v/%v/%v accepted", tc.LeaseDuration, tc.RenewDeadline, tc.RetryPeriod)
		}
	}
	if got := fmt.Sprint(leaseSeconds(1500*time.Millisecond), leaseSeconds(100*time.Millisecond), leaseSeconds(15*time.Second)); got != "2 1 15" {
		t.Errorf("leaseSeconds = %s, want 2 1 15", got)
	}
}
