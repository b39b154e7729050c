package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Leader election over a coordination.k8s.io Lease, as client-go's
// leaderelection package does it with a LeaseLock (whose generated
// clients this binary does not link):
//
//   - A candidate tries every RetryPeriod (jittered). It acquires the
//     Lease when it does not exist, names no holder, names this replica,
//     or has not changed for the holder's leaseDurationSeconds as observed
//     on this replica's clock: a record's times are never compared with
//     the local clock, so skew between replicas does not matter.
//   - Every write carries the resourceVersion read (or last written): a
//     conflict means someone else wrote first, and the try failed.
//   - The leader renews every RetryPeriod and stops leading when no
//     renewal succeeded for RenewDeadline, well before a candidate may
//     take over (LeaseDuration after it last saw the Lease change).
//   - Stopping clears the holder (leaseDurationSeconds 1), so another
//     replica takes over at once.

// jitterFactor spreads candidates' tries over up to 2.2 RetryPeriods, as
// client-go's.
const jitterFactor = 1.2

// leaseConfig names the Lease a status writer campaigns for.
type leaseConfig struct {
	Client                                    kclient.Kube
	Namespace, Name, Identity                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// What is written while leading, for log lines.
	What   string
	Logger *slog.Logger
}

// check refuses the timings client-go refuses: a leader must give up
// (RenewDeadline) before candidates may take over (LeaseDuration), and
// have more than one try to renew before then.
func (c leaseConfig) check() error {
	switch {
	case c.LeaseDuration <= c.RenewDeadline:
		return errors.New("leaseDuration must be greater than renewDeadline")
	case c.RenewDeadline <= time.Duration(jitterFactor*float64(c.RetryPeriod)):
		return errors.New("renewDeadline must be greater than retryPeriod*1.2")
	case c.RetryPeriod <= 0:
		return errors.New("retryPeriod must be greater than zero")
	}
	return nil
}

// campaign runs lead whenever this replica holds the Lease, until ctx is
// cancelled. A lost Lease is campaigned for again. On return the Lease is
// released, so another replica takes over at once.
func campaign(ctx context.Context, c leaseConfig, lead func(context.Context)) error {
	if err := c.check(); err != nil {
		return fmt.Errorf("status: leader election: %w", err)
	}
	e := &elector{c: c, leases: c.Client.CoordinationV1().Leases(c.Namespace)}
	for e.acquire(ctx) {
		c.Logger.Info("leading: writing "+c.What, "lease", c.Namespace+"/"+c.Name, "identity", c.Identity)
		e.hold(ctx, lead)
		c.Logger.Info("stopped leading: no longer writing "+c.What, "identity", c.Identity)
		e.release()
	}
	return nil
}

// elector is one replica's view of the Lease. It is used by campaign's
// goroutine alone.
type elector struct {
	c      leaseConfig
	leases kclient.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	// lease is the Lease as last read or written (its resourceVersion is
	// the one the next write carries), nil before the first; observed is
	// when its spec was first seen, on our clock.
	lease    *coordinationv1.Lease
	observed time.Time
	// renewed is when the last successful try started.
	renewed time.Time
}

// acquire tries for the Lease every RetryPeriod until it holds it (true)
// or ctx is done (false).
func (e *elector) acquire(ctx context.Context) bool {
	for ctx.Err() == nil {
		if e.tryAcquireOrRenew(ctx) {
			return true
		}
		t := time.NewTimer(wait.Jitter(e.c.RetryPeriod, jitterFactor))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return false
}

// hold runs lead while the Lease is renewed every RetryPeriod. Once no
// renewal succeeded for RenewDeadline, ctx is done or lead returns, lead's
// context is cancelled and hold returns when lead has.
func (e *elector) hold(ctx context.Context, lead func(context.Context)) {
	leadCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead(leadCtx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	tick := time.NewTicker(e.c.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-tick.C:
		}
		// No try starts or outlasts the deadline: past it, another
		// replica may be about to take over.
		deadline := e.renewed.Add(e.c.RenewDeadline)
		if time.Now().Before(deadline) {
			tryCtx, tryCancel := context.WithDeadline(ctx, deadline)
			ok := e.tryAcquireOrRenew(tryCtx)
			tryCancel()
			if ok {
				continue
			}
		}
		if ctx.Err() == nil && !time.Now().Before(deadline) {
			e.c.Logger.Warn("failed to renew the Lease in time: stopping "+e.c.What, "lease", e.c.Namespace+"/"+e.c.Name,
				"identity", e.c.Identity, "renewDeadline", e.c.RenewDeadline)
			return
		}
	}
}

// tryAcquireOrRenew writes this replica into the Lease if it may (see
// above), and reports whether it did.
func (e *elector) tryAcquireOrRenew(ctx context.Context) bool {
	now := time.Now()
	// Fast path: the leader renews the Lease as it last wrote it.
	if e.holder() == e.c.Identity && e.valid(now) {
		l := e.lease.DeepCopy()
		e.set(l, now, false)
		updated, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			e.took(updated, now)
			return true
		}
		e.c.Logger.Debug("renewing the Lease failed; reading it", "lease", e.c.Namespace+"/"+e.c.Name, "error", err)
	}
	cur, err := e.leases.Get(ctx, e.c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: e.c.Namespace, Name: e.c.Name}}
		e.set(l, now, false) // the first holder: no transition
		created, err := e.leases.Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			e.c.Logger.Debug("creating the Lease failed", "lease", e.c.Namespace+"/"+e.c.Name, "error", err)
			return false
		}
		e.took(created, now)
		return true
	}
	if err != nil {
		e.c.Logger.Debug("reading the Lease failed", "lease", e.c.Namespace+"/"+e.c.Name, "error", err)
		return false
	}
	e.see(cur, now)
	if h := e.holder(); h != "" && h != e.c.Identity && e.valid(now) {
		return false // held by another, who renewed within its lease duration
	}
	l := cur.DeepCopy()
	e.set(l, now, e.holder() != e.c.Identity)
	updated, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		e.c.Logger.Debug("taking the Lease failed", "lease", e.c.Namespace+"/"+e.c.Name, "error", err)
		return false
	}
	e.took(updated, now)
	return true
}

// took records l as written by a try that started at now.
func (e *elector) took(l *coordinationv1.Lease, now time.Time) {
	e.see(l, now)
	e.renewed = now
}

// set writes this replica into l at now; taking it over from another
// holder (or none) sets acquireTime and counts a transition.
func (e *elector) set(l *coordinationv1.Lease, now time.Time, takeover bool) {
	t := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity = ptr.To(e.c.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds(e.c.LeaseDuration))
	l.Spec.RenewTime = &t
	if takeover || l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &t
	}
	n := ptr.Deref(l.Spec.LeaseTransitions, 0)
	if takeover {
		n++
	}
	l.Spec.LeaseTransitions = &n
}

// leaseSeconds is d in whole seconds, rounded up: a Lease cannot say less
// than a second, and 0 would let anyone take it at once.
func leaseSeconds(d time.Duration) int32 {
	return int32(max((d+time.Second-1)/time.Second, 1))
}

// see records l as read or written at now; a spec not seen before starts
// its lease duration from now.
func (e *elector) see(l *coordinationv1.Lease, now time.Time) {
	if e.lease == nil || !apiequality.Semantic.DeepEqual(e.lease.Spec, l.Spec) {
		e.observed = now
	}
	e.lease = l
}

// holder is the Lease's holder as last seen, "" for none.
func (e *elector) holder() string {
	if e.lease == nil {
		return ""
	}
	return ptr.Deref(e.lease.Spec.HolderIdentity, "")
}

// valid reports whether the Lease, as last seen, is within its holder's
// lease duration at now, counted from when it was observed.
func (e *elector) valid(now time.Time) bool {
	if e.lease == nil {
		return false
	}
	d := time.Duration(ptr.Deref(e.lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	return e.observed.Add(d).After(now)
}

// release clears the holder if the Lease still names this replica, so
// another replica takes it at once; as client-go, with
// leaseDurationSeconds 1. A conflict is retried with the Lease read again,
// within RenewDeadline.
func (e *elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.c.RenewDeadline)
	defer cancel()
	for {
		cur, err := e.leases.Get(ctx, e.c.Name, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				e.c.Logger.Warn("releasing the Lease failed", "lease", e.c.Namespace+"/"+e.c.Name, "error", err)
			}
			return
		}
		now := time.Now()
		e.see(cur, now)
		if e.holder() != e.c.Identity {
			return // taken over meanwhile
		}
		l := cur.DeepCopy()
		t := metav1.NewMicroTime(now)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(""), ptr.To[int32](1)
		l.Spec.AcquireTime, l.Spec.RenewTime = &t, &t
		updated, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			e.c.Logger.Warn("releasing the Lease failed", "lease", e.c.Namespace+"/"+e.c.Name, "error", err)
			return
		}
		e.see(updated, now)
		return
	}
}

// leaseTimings fills in client-go's usual leader-election timings for the
// ones not set: 15 s lease, 10 s renew deadline, 2 s retry. Every status
// writer's Lease uses them.
func leaseTimings(lease, renew, retry time.Duration) (time.Duration, time.Duration, time.Duration) {
	return cmp.Or(lease, 15*time.Second), cmp.Or(renew, 10*time.Second), cmp.Or(retry, 2*time.Second)
}
