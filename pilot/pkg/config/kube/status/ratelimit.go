package status

import (
	"time"

	"k8s.io/utils/clock"
)

// bucket is a token bucket on status writes: it holds up to burst tokens
// and gains qps per second. It is used by the lead loop alone, so it needs
// no lock; its clock is injected so tests can step it.
type bucket struct {
	clock  clock.PassiveClock
	qps    float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(c clock.PassiveClock, qps float64, burst int) *bucket {
	return &bucket{clock: c, qps: qps, burst: float64(burst), tokens: float64(burst), last: c.Now()}
}

// take spends a token if one is there.
func (b *bucket) take() bool {
	now := b.clock.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.qps)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
