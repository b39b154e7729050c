package leaderelection

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

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	leaseNS   = "wayfinder-system"
	leaseName = "test-lease"
)

// The timings of the tests: every try is one RetryPeriod after the last
// (no jitter), a leader without renewals stops on its third tick, and a
// candidate takes over an unchanged Lease on its fourth retry.
var timings = Options{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}

// epoch is where the first candidate's clock starts. Each candidate has a
// clock of its own; the others' are skewed from it by an hour, since a
// Lease's times must never be compared with the local clock.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

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

// write replaces the Lease's spec as another writer would (based on the
// current resourceVersion).
func (c *leaseCluster) write(t *testing.T, holder string, seconds, transitions int32, at time.Time) {
	t.Helper()
	l := c.lease(t)
	mt := metav1.NewMicroTime(at)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(holder), ptr.To(seconds)
	l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &mt, &mt, ptr.To(transitions)
	if _, err := c.cs.CoordinationV1().Leases(leaseNS).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// replica is one candidate's access to the API server: it counts its
// reads of the Lease, its Lease calls fail while it is cut off, and
// beforeUpdate, when set, runs once before its next update is sent.
type replica struct {
	kclient.Kube
	reads        atomic.Int64
	cut          atomic.Bool
	beforeUpdate atomic.Pointer[func()]
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
	if f := l.r.beforeUpdate.Swap(nil); f != nil {
		(*f)()
	}
	return l.Resource.Update(ctx, obj, opts)
}

// testClock is a fake clock that counts how often the elector has started
// waiting on one of its timers or tickers (it reads C() each time it
// enters its select), so a test knows when the elector has finished
// reacting to a step and is waiting again.
type testClock struct {
	*clocktesting.FakeClock
	waits atomic.Int64
}

func (c *testClock) NewTimer(d time.Duration) clock.Timer {
	return countingTimer{Timer: c.FakeClock.NewTimer(d), waits: &c.waits}
}

func (c *testClock) NewTicker(d time.Duration) clock.Ticker {
	return countingTicker{Ticker: c.FakeClock.NewTicker(d), waits: &c.waits}
}

type countingTimer struct {
	clock.Timer
	waits *atomic.Int64
}

func (t countingTimer) C() <-chan time.Time { t.waits.Add(1); return t.Timer.C() }

type countingTicker struct {
	clock.Ticker
	waits *atomic.Int64
}

func (t countingTicker) C() <-chan time.Time { t.waits.Add(1); return t.Ticker.C() }

// candidate runs an Elector as one replica on a clock of its own; its lead
// reports every term.
type candidate struct {
	*replica
	id             string
	clk            *testClock
	started, ended chan struct{}
	leading        atomic.Bool
	stop           func()
}

// candidate starts identity on a clock starting at start, with timings
// (and no jitter unless timings sets one), and returns once it has made
// its first try and waits for the next step of its clock.
func (c *leaseCluster) candidate(t *testing.T, identity string, start time.Time, timings Options) *candidate {
	t.Helper()
	r := &replica{Kube: kclienttest.Kube(c.cs)}
	cd := &candidate{replica: r, id: identity, clk: &testClock{FakeClock: clocktesting.NewFakeClock(start)},
		started: make(chan struct{}, 10), ended: make(chan struct{}, 10)}
	opts := timings
	opts.Client, opts.Namespace, opts.Name, opts.Identity = r, leaseNS, leaseName, identity
	opts.What, opts.Logger, opts.Clock = "test status", slog.New(slog.DiscardHandler), cd.clk
	if opts.Jitter == nil {
		opts.Jitter = func(d time.Duration) time.Duration { return d }
	}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context) {
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
				t.Errorf("Run %s: %v", identity, err)
			}
		})
	}
	t.Cleanup(cd.stop)
	cd.waitingAfter(t, 0, "its first try")
	return cd
}

// step moves the candidate's clock by d, which must fire its timer or
// ticker, and returns once the elector has reacted and waits again.
func (c *candidate) step(t *testing.T, d time.Duration) {
	t.Helper()
	n := c.clk.waits.Load()
	c.clk.Step(d)
	c.waitingAfter(t, n, "a step of "+d.String())
}

func (c *candidate) waitingAfter(t *testing.T, n int64, what string) {
	t.Helper()
	poll.Until(t, c.id+" waiting on its clock after "+what, func() bool { return c.clk.waits.Load() > n },
		poll.Timeout(10*time.Second), poll.Interval(time.Millisecond))
}

// await waits for a report of the candidate's lead, which runs on a
// goroutine of its own, failing after 10s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

// checkTerms fails unless the candidate is (or is not) leading and has
// started and ended the given numbers of terms since last drained.
func (c *candidate) checkTerms(t *testing.T, leading bool, started, ended int) {
	t.Helper()
	if c.leading.Load() != leading || len(c.started) != started || len(c.ended) != ended {
		t.Fatalf("%s at %v: leading %v, %d terms started and %d ended; want %v, %d and %d", c.id, c.clk.Now().Sub(epoch),
			c.leading.Load(), len(c.started), len(c.ended), leading, started, ended)
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

func checkTimes(t *testing.T, l *coordinationv1.Lease, acquired, renewed time.Time) {
	t.Helper()
	if !l.Spec.AcquireTime.Time.Equal(acquired) || !l.Spec.RenewTime.Time.Equal(renewed) {
		t.Errorf("acquireTime %v, renewTime %v; want %v and %v", l.Spec.AcquireTime, l.Spec.RenewTime, acquired, renewed)
	}
}

// A Lease that does not exist is created by the first candidate, which
// renews it every RetryPeriod (on its clock) while leading, long past
// RenewDeadline, and clears it when stopped.
func TestLeaseAcquiredWhenAbsentAndRenewed(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", epoch, timings)
	await(t, a.started, "pod-a leading")
	first := c.lease(t)
	checkLease(t, first, "pod-a", 4, 0)
	checkTimes(t, first, epoch, epoch)

	prev := first.ResourceVersion
	for i := 1; i <= 5; i++ {
		a.step(t, time.Second)
		l := c.lease(t)
		checkLease(t, l, "pod-a", 4, 0)
		checkTimes(t, l, epoch, epoch.Add(time.Duration(i)*time.Second)) // renewed now, acquired then
		if l.ResourceVersion == prev {
			t.Fatalf("renewal %d wrote nothing", i)
		}
		prev = l.ResourceVersion
		a.checkTerms(t, true, 0, 0)
	}

	a.stop()
	a.checkTerms(t, false, 0, 1) // lead returned before Run did
	checkLease(t, c.lease(t), "", 1, 0)
}

// A leader cut off from the API server keeps leading until RenewDeadline
// has passed on its clock since its last renewal, and stops on the first
// tick at or past it.
func TestLeadStopsAtRenewDeadlineWithoutRenewals(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", epoch, timings)
	await(t, a.started, "pod-a leading")
	a.step(t, time.Second) // renewed at epoch+1s
	a.cut.Store(true)

	a.step(t, time.Second) // epoch+2s
	a.step(t, time.Second) // epoch+3s
	a.checkTerms(t, true, 0, 0)
	a.step(t, time.Second) // epoch+4s: the renewal deadline
	a.checkTerms(t, false, 0, 1)
	// Cut off, it could not release the Lease either.
	l := c.lease(t)
	checkLease(t, l, "pod-a", 4, 0)
	checkTimes(t, l, epoch, epoch.Add(time.Second))

	// Back in touch, it finds the Lease still its own and leads again.
	a.cut.Store(false)
	a.step(t, time.Second)
	await(t, a.started, "pod-a leading again")
	checkLease(t, c.lease(t), "pod-a", 4, 0)
}

// A candidate takes over a Lease whose holder stopped renewing once the
// Lease has not changed for its duration as measured on the candidate's
// own clock, however far that clock is from the holder's. The former
// holder's next renewal then conflicts, it finds the Lease taken, and it
// stops leading at its renewal deadline without touching the Lease.
func TestLeaseTakenOverAfterLeaseDurationOnLocalClock(t *testing.T) {
	for _, skew := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(fmt.Sprint("skew ", skew), func(t *testing.T) {
			c := newLeaseCluster()
			a := c.candidate(t, "pod-a", epoch, timings)
			await(t, a.started, "pod-a leading")
			// pod-a's clock stands still from here: it does not renew.
			bStart := epoch.Add(skew)
			b := c.candidate(t, "pod-b", bStart, timings)
			for i := 1; i <= 3; i++ {
				reads := b.reads.Load()
				b.step(t, time.Second)
				if b.reads.Load() != reads+1 {
					t.Fatalf("retry %d: %d reads, want 1", i, b.reads.Load()-reads)
				}
				b.checkTerms(t, false, 0, 0)
			}
			b.step(t, time.Second) // 4s after pod-b first saw the Lease
			await(t, b.started, "pod-b taking over the expired Lease")
			l := c.lease(t)
			checkLease(t, l, "pod-b", 4, 1)
			checkTimes(t, l, bStart.Add(4*time.Second), bStart.Add(4*time.Second))

			a.step(t, time.Second) // the renewal conflicts; the Lease is pod-b's
			a.step(t, time.Second)
			a.checkTerms(t, true, 0, 0)
			a.step(t, time.Second) // pod-a's renewal deadline
			a.checkTerms(t, false, 0, 1)
			if got := c.lease(t); got.ResourceVersion != l.ResourceVersion {
				t.Errorf("pod-a wrote the Lease after losing it: %+v", got.Spec)
			}
			b.checkTerms(t, true, 0, 0)
		})
	}
}

// When the holder stops, its release lets the other candidate take over
// on its next try, long before the Lease would expire.
func TestLeaseReleasedOnStopIsTakenOverAtOnce(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", epoch, timings)
	await(t, a.started, "pod-a leading")
	b := c.candidate(t, "pod-b", epoch.Add(time.Hour), timings)
	b.step(t, time.Second)
	b.checkTerms(t, false, 0, 0)
	checkLease(t, c.lease(t), "pod-a", 4, 0)

	a.stop()
	checkLease(t, c.lease(t), "", 1, 0)
	b.step(t, time.Second)
	await(t, b.started, "pod-b leading after pod-a's release")
	checkLease(t, c.lease(t), "pod-b", 4, 1)
}

// A Lease someone else overwrote is lost: the renewal conflicts, lead is
// stopped at the renewal deadline, and the Lease is neither released nor
// retaken while the other holder's record is valid.
func TestLostLeaseStopsLead(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", epoch, timings)
	await(t, a.started, "pod-a leading")
	c.write(t, "pod-other", 3600, 7, epoch)

	a.step(t, time.Second)
	a.step(t, time.Second)
	a.checkTerms(t, true, 0, 0)
	a.step(t, time.Second)
	a.checkTerms(t, false, 0, 1)
	for range 10 {
		a.step(t, time.Second)
	}
	a.checkTerms(t, false, 0, 1)
	a.stop()
	checkLease(t, c.lease(t), "pod-other", 3600, 7)
}

// A takeover is a write based on the Lease as read: when another replica
// writes first, it conflicts and the candidate does not lead; on its next
// try it finds the other's record valid and does not write.
func TestTakeoverConflictsWhenAnotherWritesFirst(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", epoch, timings)
	await(t, a.started, "pod-a leading")
	b := c.candidate(t, "pod-b", epoch, timings)
	// Runs on pod-b's goroutine: it may not stop the test.
	other := func() {
		l, err := c.cs.CoordinationV1().Leases(leaseNS).Get(context.Background(), leaseName, metav1.GetOptions{})
		if err == nil {
			mt := metav1.NewMicroTime(epoch)
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To("pod-c"), ptr.To[int32](3600)
			l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &mt, &mt, ptr.To[int32](1)
			_, err = c.cs.CoordinationV1().Leases(leaseNS).Update(context.Background(), l, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("pod-c writing the Lease: %v", err)
		}
	}
	b.beforeUpdate.Store(&other)
	a.stop() // released: pod-b may take the Lease on its next try

	b.step(t, time.Second)
	b.checkTerms(t, false, 0, 0)
	taken := c.lease(t)
	checkLease(t, taken, "pod-c", 3600, 1)
	b.step(t, time.Second)
	b.checkTerms(t, false, 0, 0)
	if got := c.lease(t); got.ResourceVersion != taken.ResourceVersion {
		t.Errorf("pod-b wrote the Lease held by pod-c: %+v", got.Spec)
	}
}

// A candidate waits what Jitter says between tries.
func TestRetriesAfterJitter(t *testing.T) {
	c := newLeaseCluster()
	a := c.candidate(t, "pod-a", epoch, timings)
	await(t, a.started, "pod-a leading")
	slow := timings
	slow.Jitter = func(d time.Duration) time.Duration { return 2*d + 500*time.Millisecond }
	b := c.candidate(t, "pod-b", epoch, slow)
	reads := b.reads.Load()
	// Steps are synchronous: a timer that is not due sends nothing.
	b.clk.Step(2 * time.Second)
	if got := b.reads.Load(); got != reads {
		t.Fatalf("tried %d times before the jittered period", got-reads)
	}
	b.step(t, 500*time.Millisecond)
	if got := b.reads.Load(); got != reads+1 {
		t.Fatalf("tried %d times at the jittered period, want 1", got-reads)
	}
}

func TestNewRejectsBadTimings(t *testing.T) {
	client := kclienttest.Kube(fake.NewClientset())
	for _, tc := range []Options{
		{LeaseDuration: time.Second, RenewDeadline: time.Second, RetryPeriod: 10 * time.Millisecond},
		{LeaseDuration: time.Minute, RenewDeadline: time.Second, RetryPeriod: time.Second},
		{LeaseDuration: time.Minute, RenewDeadline: time.Second}, // the default retry period is too long
		{LeaseDuration: time.Minute, RenewDeadline: time.Second, RetryPeriod: -time.Second},
	} {
		tc.Client = client
		if _, err := New(tc); err == nil {
			t.Errorf("%v/%v/%v accepted", tc.LeaseDuration, tc.RenewDeadline, tc.RetryPeriod)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("no Client accepted")
	}
	e, err := New(Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(e.o.LeaseDuration, e.o.RenewDeadline, e.o.RetryPeriod); got != "15s 10s 2s" {
		t.Errorf("default timings %s, want 15s 10s 2s", got)
	}
	if got := fmt.Sprint(leaseSeconds(1500*time.Millisecond), leaseSeconds(100*time.Millisecond), leaseSeconds(15*time.Second)); got != "2 1 15" {
		t.Errorf("leaseSeconds = %s, want 2 1 15", got)
	}
}
