package leaderelection

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// client-go's recommended leader-election timings, used for the ones
// Options leaves zero.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// JitterFactor spreads candidates' tries over up to 2.2 RetryPeriods, as
// client-go's.
const JitterFactor = 1.2

// Options name the Lease a replica campaigns for and how.
type Options struct {
	// Client reads and writes the Lease. Required.
	Client kclient.Kube
	// Namespace and Name locate the Lease; Identity is this replica in it
	// (the pod name). Required.
	Namespace, Name, Identity string
	// LeaseDuration is how long a candidate waits, after it last saw the
	// Lease change, before taking it over; RenewDeadline how long the
	// leader keeps leading without a successful renewal; RetryPeriod the
	// interval between tries. Zero means DefaultLeaseDuration,
	// DefaultRenewDeadline and DefaultRetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// What the leader does, for log lines ("leading: writing " + What).
	What string
	// Clock times tries, renewals and the lease duration; default the
	// real clock. API calls are bounded by real-time contexts of the
	// durations this clock measures.
	Clock clock.WithTicker
	// Jitter is the wait before a candidate's next try given RetryPeriod;
	// default wait.Jitter with JitterFactor (random, so candidates that
	// start together do not try together).
	Jitter func(time.Duration) time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Elector campaigns for one Lease as one replica.
type Elector struct {
	o      Options
	leases kclient.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

// New checks opts and fills in the defaults. It refuses the timings
// client-go refuses: a leader must give up (RenewDeadline) before
// candidates may take over (LeaseDuration), and have more than one try to
// renew before then.
func New(opts Options) (*Elector, error) {
	if opts.Client == nil {
		return nil, errors.New("leader election: Client is required")
	}
	opts.LeaseDuration = cmp.Or(opts.LeaseDuration, DefaultLeaseDuration)
	opts.RenewDeadline = cmp.Or(opts.RenewDeadline, DefaultRenewDeadline)
	opts.RetryPeriod = cmp.Or(opts.RetryPeriod, DefaultRetryPeriod)
	if err := checkTimings(opts); err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Jitter == nil {
		opts.Jitter = func(d time.Duration) time.Duration { return wait.Jitter(d, JitterFactor) }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Elector{o: opts, leases: opts.Client.CoordinationV1().Leases(opts.Namespace)}, nil
}

func checkTimings(o Options) error {
	switch {
	case o.LeaseDuration <= o.RenewDeadline:
		return errors.New("leaseDuration must be greater than renewDeadline")
	case o.RenewDeadline <= time.Duration(JitterFactor*float64(o.RetryPeriod)):
		return errors.New("renewDeadline must be greater than retryPeriod*1.2")
	case o.RetryPeriod <= 0:
		return errors.New("retryPeriod must be greater than zero")
	}
	return nil
}

// Run runs lead whenever this replica holds the Lease, until ctx is
// cancelled; lead's context is cancelled when the Lease is lost, and Run
// waits for lead to return. A lost Lease is campaigned for again. On
// return the Lease is released, so another replica takes over at once.
// Run is not safe to call twice at the same time.
func (e *Elector) Run(ctx context.Context, lead func(context.Context)) error {
	c := &campaign{o: e.o, leases: e.leases}
	for c.acquire(ctx) {
		c.o.Logger.Info("leading: writing "+c.o.What, "lease", c.o.Namespace+"/"+c.o.Name, "identity", c.o.Identity)
		c.hold(ctx, lead)
		c.o.Logger.Info("stopped leading: no longer writing "+c.o.What, "identity", c.o.Identity)
		c.release()
	}
	return nil
}

// campaign is one replica's view of the Lease during one Run. It is used
// by Run's goroutine alone.
type campaign struct {
	o      Options
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
func (c *campaign) acquire(ctx context.Context) bool {
	for ctx.Err() == nil {
		if c.tryAcquireOrRenew(ctx) {
			return true
		}
		t := c.o.Clock.NewTimer(c.o.Jitter(c.o.RetryPeriod))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
	}
	return false
}

// hold runs lead while the Lease is renewed every RetryPeriod. Once no
// renewal succeeded for RenewDeadline, ctx is done or lead returns, lead's
// context is cancelled and hold returns when lead has.
func (c *campaign) hold(ctx context.Context, lead func(context.Context)) {
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
	tick := c.o.Clock.NewTicker(c.o.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-tick.C():
		}
		// No try starts or outlasts the deadline: past it, another
		// replica may be about to take over.
		deadline := c.renewed.Add(c.o.RenewDeadline)
		if now := c.o.Clock.Now(); now.Before(deadline) {
			tryCtx, tryCancel := context.WithTimeout(ctx, deadline.Sub(now))
			ok := c.tryAcquireOrRenew(tryCtx)
			tryCancel()
			if ok {
				continue
			}
		}
		if ctx.Err() == nil && !c.o.Clock.Now().Before(deadline) {
			c.o.Logger.Warn("failed to renew the Lease in time: stopping "+c.o.What, "lease", c.o.Namespace+"/"+c.o.Name,
				"identity", c.o.Identity, "renewDeadline", c.o.RenewDeadline)
			return
		}
	}
}
