package leaderelection

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// tryAcquireOrRenew writes this replica into the Lease if it may (see the
// package comment), and reports whether it did.
func (c *campaign) tryAcquireOrRenew(ctx context.Context) bool {
	now := c.o.Clock.Now()
	// Fast path: the leader renews the Lease as it last wrote it.
	if c.holder() == c.o.Identity && c.valid(now) {
		l := c.lease.DeepCopy()
		c.set(l, now, false)
		updated, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			c.took(updated, now)
			return true
		}
		c.o.Logger.Debug("renewing the Lease failed; reading it", "lease", c.o.Namespace+"/"+c.o.Name, "error", err)
	}
	cur, err := c.leases.Get(ctx, c.o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: c.o.Namespace, Name: c.o.Name}}
		c.set(l, now, false) // the first holder: no transition
		created, err := c.leases.Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			c.o.Logger.Debug("creating the Lease failed", "lease", c.o.Namespace+"/"+c.o.Name, "error", err)
			return false
		}
		c.took(created, now)
		return true
	}
	if err != nil {
		c.o.Logger.Debug("reading the Lease failed", "lease", c.o.Namespace+"/"+c.o.Name, "error", err)
		return false
	}
	c.see(cur, now)
	if h := c.holder(); h != "" && h != c.o.Identity && c.valid(now) {
		return false // held by another, who renewed within its lease duration
	}
	l := cur.DeepCopy()
	c.set(l, now, c.holder() != c.o.Identity)
	updated, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		c.o.Logger.Debug("taking the Lease failed", "lease", c.o.Namespace+"/"+c.o.Name, "error", err)
		return false
	}
	c.took(updated, now)
	return true
}

// took records l as written by a try that started at now.
func (c *campaign) took(l *coordinationv1.Lease, now time.Time) {
	c.see(l, now)
	c.renewed = now
}

// set writes this replica into l at now; taking it over from another
// holder (or none) sets acquireTime and counts a transition.
func (c *campaign) set(l *coordinationv1.Lease, now time.Time, takeover bool) {
	t := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity = ptr.To(c.o.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds(c.o.LeaseDuration))
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
func (c *campaign) see(l *coordinationv1.Lease, now time.Time) {
	if c.lease == nil || !apiequality.Semantic.DeepEqual(c.lease.Spec, l.Spec) {
		c.observed = now
	}
	c.lease = l
}

// holder is the Lease's holder as last seen, "" for none.
func (c *campaign) holder() string {
	if c.lease == nil {
		return ""
	}
	return ptr.Deref(c.lease.Spec.HolderIdentity, "")
}

// valid reports whether the Lease, as last seen, is within its holder's
// lease duration at now, counted from when it was observed.
func (c *campaign) valid(now time.Time) bool {
	if c.lease == nil {
		return false
	}
	d := time.Duration(ptr.Deref(c.lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	return c.observed.Add(d).After(now)
}

// release clears the holder if the Lease still names this replica, so
// another replica takes it at once; as client-go, with
// leaseDurationSeconds 1. A conflict is retried with the Lease read again,
// within RenewDeadline (real time: release runs after ctx is done, and a
// fake clock would never end it).
func (c *campaign) release() {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.RenewDeadline)
	defer cancel()
	for {
		cur, err := c.leases.Get(ctx, c.o.Name, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				c.o.Logger.Warn("releasing the Lease failed", "lease", c.o.Namespace+"/"+c.o.Name, "error", err)
			}
			return
		}
		now := c.o.Clock.Now()
		c.see(cur, now)
		if c.holder() != c.o.Identity {
			return // taken over meanwhile
		}
		l := cur.DeepCopy()
		t := metav1.NewMicroTime(now)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(""), ptr.To[int32](1)
		l.Spec.AcquireTime, l.Spec.RenewTime = &t, &t
		updated, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			c.o.Logger.Warn("releasing the Lease failed", "lease", c.o.Namespace+"/"+c.o.Name, "error", err)
			return
		}
		c.see(updated, now)
		return
	}
}
