package xds

import (
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// A steady stream of endpoint-only changes, never quiet long enough for
// either debouncer's quiet period, is still pushed: every
// EndpointDebounce.MaxDelay, not after the config debouncer's maximum (here
// an hour, so nothing but the endpoint debouncer can fire). Full requests
// keep going through the config debouncer.
func TestEndpointChurnIsPushedWithoutWaitingForQuiet(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		// The first push (after a quiet spell) goes out after 1 ms; any
		// later full batch would wait an hour.
		o.Debounce = debounce.Options{QuietPeriod: time.Hour, MaxDelay: time.Hour, LeadingDelay: time.Millisecond, Clock: clock.RealClock{}}
		o.EndpointDebounce = debounce.Options{QuietPeriod: 50 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	})
	h.syncAndWait()
	before := h.gen.endpoints.Load()

	deadline := time.After(wait)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for h.gen.endpoints.Load() < before+2 {
		select {
		case <-deadline:
			t.Fatalf("endpoint-only changes every 2 ms: %d endpoint pushes in %v, want 2", h.gen.endpoints.Load()-before, wait)
		case <-tick.C:
			h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}})
		}
	}
	// A full request waits for the config debouncer's quiet period: no
	// full translation happens while the test runs.
	services := h.gen.services.Load()
	h.s.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"config": 1}})
	h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}})
	for n := h.gen.endpoints.Load(); h.gen.endpoints.Load() == n; {
		select {
		case <-deadline:
			t.Fatal("an endpoint change after a pending full request was not pushed")
		case <-tick.C:
		}
	}
	if got := h.gen.services.Load(); got != services {
		t.Errorf("a full request was translated through the endpoint debouncer (%d service translations)", got-services)
	}
}
