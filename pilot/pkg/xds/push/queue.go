package push

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// Endpoint-only changes (EndpointSlices of Kubernetes Services) have their
// own debouncer. Through the config debouncer, a steady stream of them (an
// EndpointSlice update every few milliseconds, as in a rollout) never lets
// the 100 ms quiet period pass, so each batch waited the full 10 s maximum:
// at 50 updates a second the last gateway had a change after 2.3 s at the
// median and 10 s at p99. An endpoints push rebuilds only the changed
// clusters' assignments and sends them only to their subscribers, so
// pushing every 20 ms under churn is cheap, and a lone change goes out
// after 10 ms. (At 200 updates a second to 500 gateways, a 50 ms maximum
// took the p99 from the write to the last gateway's ACK from about 200 to
// 150 ms, for a sixth more CPU per change than 100 ms; 30 ms took the
// median down by another 6 to 28 ms and the p99 by 14 to 135 ms in each
// of six runs against 50 ms, both protocols, for 3 to 12% more CPU per
// change; 20 ms took the SotW p99 down by another 100 to 136 ms in each of
// two runs against 30 ms, delta's by nothing beyond the spread, for 3 to
// 5% more CPU per change.) A full push pending meanwhile is unaffected: it
// rebuilds everything, endpoints included, from the store as it is then.
const (
	defaultEndpointQuiet    = 10 * time.Millisecond
	defaultEndpointMaxDelay = 20 * time.Millisecond
)

// DefaultEndpointDebounce returns the endpoint debouncer's defaults.
func DefaultEndpointDebounce() debounce.Options {
	return debounce.Options{QuietPeriod: defaultEndpointQuiet, MaxDelay: defaultEndpointMaxDelay}
}

// Queue merges push requests into pushes: Full requests through the
// config debouncer, endpoint-only ones (not Full) through a debouncer of
// their own with a short maximum, so that steady endpoint churn is pushed
// every MaxDelay instead of waiting for a quiet period that never comes.
// Each merged request is handed to the fire function given to NewQueue,
// one at a time per debouncer.
type Queue struct {
	config, endpoints *debounce.Debouncer[*model.PushRequest]
	fire              func(*model.PushRequest)
	// merged is the batch the config debouncer is building, made by merge
	// and owned by it until fired; see merge.
	merged atomic.Pointer[model.PushRequest]
	// edsMerged is merged's counterpart for the endpoint debouncer.
	edsMerged atomic.Pointer[model.PushRequest]
}

// NewQueue builds the two debouncers. cfg is the config debouncer's
// options; eds the endpoint debouncer's, whose zero values take
// DefaultEndpointDebounce's and whose nil Clock takes cfg's. Both report
// to cfg.OnFire.
func NewQueue(cfg, eds debounce.Options, fire func(*model.PushRequest)) *Queue {
	q := &Queue{fire: fire}
	q.config = debounce.New(cfg, q.merge, q.fireConfig)
	def := DefaultEndpointDebounce()
	if eds.QuietPeriod <= 0 {
		eds.QuietPeriod = def.QuietPeriod
	}
	if eds.MaxDelay <= 0 {
		eds.MaxDelay = def.MaxDelay
	}
	if eds.Clock == nil {
		eds.Clock = cfg.Clock
	}
	eds.OnFire = cfg.OnFire
	q.endpoints = debounce.New(eds,
		func(a, b *model.PushRequest) *model.PushRequest { return mergeInto(&q.edsMerged, a, b) },
		func(req *model.PushRequest) {
			q.edsMerged.CompareAndSwap(req, nil)
			fire(req)
		})
	return q
}

// fireConfig is the config debouncer's callback.
func (q *Queue) fireConfig(req *model.PushRequest) {
	// The batch is no longer the debouncer's: never extend it again.
	q.merged.CompareAndSwap(req, nil)
	q.fire(req)
}

// Enqueue adds a request to its debouncer's batch.
func (q *Queue) Enqueue(req *model.PushRequest) {
	if !req.Full {
		q.endpoints.Enqueue(req)
		return
	}
	q.config.Enqueue(req)
}

// Flush fires the config debouncer's batch without its leading delay
// (see debounce.Debouncer.Flush).
func (q *Queue) Flush() { q.config.Flush() }

// Run runs both debouncers until ctx is cancelled and returns once both
// have returned.
func (q *Queue) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { q.config.Run(ctx) })
	wg.Go(func() { q.endpoints.Run(ctx) })
	wg.Wait()
}

// merge is the config debouncer's merge (called under its lock, one at a
// time): model.PushRequest.Merge, except that a batch this function made
// earlier is extended in place instead of copied. Copying made a burst of
// n changes (a config load: one per object) cost O(n^2): at 5,000
// services, gigabytes of garbage before the first push. Inputs from
// callers are never modified.
func (q *Queue) merge(a, b *model.PushRequest) *model.PushRequest {
	return mergeInto(&q.merged, a, b)
}

// mergeInto is merge for the batch whose owner is *merged.
func mergeInto(merged *atomic.Pointer[model.PushRequest], a, b *model.PushRequest) *model.PushRequest {
	if a == nil || b == nil || a != merged.Load() {
		out := a.Merge(b)
		if out != a && out != b {
			merged.Store(out)
		}
		return out
	}
	a.Full = a.Full || b.Full
	if a.Start.IsZero() || (!b.Start.IsZero() && b.Start.Before(a.Start)) {
		a.Start = b.Start
	}
	// As in Merge, an empty set (everything) stays empty.
	if len(b.ConfigsUpdated) == 0 {
		clear(a.ConfigsUpdated)
	} else if len(a.ConfigsUpdated) > 0 {
		maps.Copy(a.ConfigsUpdated, b.ConfigsUpdated)
	}
	for r, n := range b.Reasons {
		a.Reasons[r] += n
	}
	return a
}
