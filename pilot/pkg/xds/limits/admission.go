package limits

import (
	"context"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// tokenBucket is a token bucket on an injected clock: rate tokens a
// second, holding at most burst. Not safe for concurrent use.
type tokenBucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

func newTokenBucket(rate float64, burst int, now time.Time) *tokenBucket {
	if rate < 0 {
		return nil // off
	}
	b := float64(max(burst, 1))
	return &tokenBucket{rate: rate, burst: b, tokens: b, last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(b.burst, b.tokens+dt*b.rate)
	}
	b.last = now
}

// allow takes a token if one is there.
func (b *tokenBucket) allow(now time.Time) bool {
	if b == nil {
		return true
	}
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// reserve takes a token, going into debt if needed, and returns how long
// until the token is due.
func (b *tokenBucket) reserve(now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.refill(now)
	b.tokens--
	if b.tokens >= 0 || b.rate == 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// admission queues new streams: each takes a token of a server-wide
// bucket and waits until it is due. Waiting streams hold only their
// goroutine; a client that gives up (its context ends) returns its token.
// At most max streams wait: the bucket's debt is bounded by them, and a
// stream beyond is refused rather than queued behind a debt that could
// grow for as long as clients keep coming.
type admission struct {
	clock   clock.Clock
	max     int // negative: no bound
	mu      sync.Mutex
	b       *tokenBucket
	waiting int
}

func newAdmission(c clock.Clock, rate float64, burst, maxQueued int) *admission {
	return &admission{clock: c, b: newTokenBucket(rate, burst, c.Now()), max: maxQueued}
}

// errQueueFull refuses a stream when max streams are waiting already.
var errQueueFull = status.Error(codes.ResourceExhausted, "too many ADS streams waiting for admission; retry later (limit admission_queue)")

// wait returns once the stream may start, or with the context's error
// when the client or the server gave up first, or errQueueFull. It
// returns how long the stream waited.
func (a *admission) wait(ctx, server context.Context) (time.Duration, error) {
	if a.b == nil {
		return 0, nil
	}
	a.mu.Lock()
	now := a.clock.Now()
	a.b.refill(now)
	if a.b.tokens < 1 && exceeds(a.waiting+1, a.max) {
		a.mu.Unlock()
		return 0, errQueueFull
	}
	d := a.b.reserve(now)
	if d <= 0 {
		a.mu.Unlock()
		return 0, nil
	}
	// The timer is made before the stream counts as waiting, so that
	// whoever sees it waiting (a test stepping a fake clock) also finds
	// its timer on the clock.
	t := a.clock.NewTimer(d)
	defer t.Stop()
	a.waiting++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.waiting--
		a.mu.Unlock()
	}()
	select {
	case <-t.C():
		return d, nil
	case <-ctx.Done():
		a.refund()
		return 0, status.FromContextError(ctx.Err()).Err()
	case <-server.Done():
		a.refund()
		return 0, status.Error(codes.Unavailable, "server shutting down")
	}
}

func (a *admission) refund() {
	a.mu.Lock()
	a.b.tokens = math.Min(a.b.burst, a.b.tokens+1)
	a.mu.Unlock()
}

// queue returns the streams waiting and the tokens the bucket owes (for
// tests and debugging).
func (a *admission) queue() (waiting int, debt float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.b == nil {
		return a.waiting, 0
	}
	a.b.refill(a.clock.Now())
	return a.waiting, -a.b.tokens
}
