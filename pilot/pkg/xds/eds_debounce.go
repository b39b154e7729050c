package xds

import (
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
// clusters' assignments and sends them only to their subscribers (push.go),
// so pushing every 20 ms under churn is cheap, and a lone change goes out
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

// newEndpointDebouncer builds the debouncer of endpoint-only requests,
// observed in pilot_debounce_time like the config debouncer (cfg.OnFire).
// A nil Clock takes the config debouncer's (cfg).
func (s *DiscoveryServer) newEndpointDebouncer(opts, cfg debounce.Options) *debounce.Debouncer[*model.PushRequest] {
	def := DefaultEndpointDebounce()
	if opts.QuietPeriod <= 0 {
		opts.QuietPeriod = def.QuietPeriod
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = def.MaxDelay
	}
	if opts.Clock == nil {
		opts.Clock = cfg.Clock
	}
	opts.OnFire = cfg.OnFire
	return debounce.New(opts,
		func(a, b *model.PushRequest) *model.PushRequest { return mergeInto(&s.edsMerged, a, b) },
		func(req *model.PushRequest) {
			s.edsMerged.CompareAndSwap(req, nil)
			s.fire(req)
		})
}
