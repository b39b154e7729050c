package status

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseConfig names the Lease a status writer campaigns for.
type leaseConfig struct {
	Client                                    kubernetes.Interface
	Namespace, Name, Identity                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// What is written while leading, for log lines.
	What   string
	Logger *slog.Logger
}

// campaign runs lead whenever this replica holds the Lease, until ctx is
// cancelled. A lost Lease is campaigned for again. On return the Lease is
// released, so another replica takes over at once.
func campaign(ctx context.Context, c leaseConfig, lead func(context.Context)) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Client:     c.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}
	for ctx.Err() == nil {
		// client-go calls OnStartedLeading in a goroutine of its own; the
		// work is done here instead, so nothing outlives campaign.
		started := make(chan context.Context, 1)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   c.LeaseDuration,
			RenewDeadline:   c.RenewDeadline,
			RetryPeriod:     c.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            c.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) { started <- ctx },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			return fmt.Errorf("status: leader election: %w", err)
		}
		elCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			le.Run(elCtx)
		}()
		select {
		case leadCtx := <-started:
			c.Logger.Info("leading: writing "+c.What, "lease", c.Namespace+"/"+c.Name, "identity", c.Identity)
			lead(leadCtx)
			c.Logger.Info("stopped leading: no longer writing "+c.What, "identity", c.Identity)
		case <-done:
		}
		cancel() // releases the Lease if still held
		<-done
	}
	return nil
}

// leaseTimings fills in client-go's usual leader-election timings for the
// ones not set: 15 s lease, 10 s renew deadline, 2 s retry. Every status
// writer's Lease uses them.
func leaseTimings(lease, renew, retry time.Duration) (time.Duration, time.Duration, time.Duration) {
	return cmp.Or(lease, 15*time.Second), cmp.Or(renew, 10*time.Second), cmp.Or(retry, 2*time.Second)
}
