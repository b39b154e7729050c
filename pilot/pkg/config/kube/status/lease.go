package status

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/leaderelection"
)

// campaign runs lead whenever this replica holds the Lease o names, until
// ctx is cancelled (see package leaderelection). Leader election runs on
// the real clock: a writer's Clock times only its own retries.
func campaign(ctx context.Context, o leaderelection.Options, lead func(context.Context)) error {
	e, err := leaderelection.New(o)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return e.Run(ctx, lead)
}

// leaseTimings fills in client-go's usual leader-election timings for the
// ones not set: 15 s lease, 10 s renew deadline, 2 s retry. Every status
// writer's Lease uses them.
func leaseTimings(lease, renew, retry time.Duration) (time.Duration, time.Duration, time.Duration) {
	return cmp.Or(lease, leaderelection.DefaultLeaseDuration), cmp.Or(renew, leaderelection.DefaultRenewDeadline),
		cmp.Or(retry, leaderelection.DefaultRetryPeriod)
}
