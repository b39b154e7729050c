package debounce

import (
	"testing"
	"time"
)

func adaptiveOptions() Options {
	return Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second, LeadingDelay: 10 * time.Millisecond}
}

func TestLeadingDelayFiresALoneEventEarly(t *testing.T) {
	h := newHarness(t, adaptiveOptions())
	h.run()
	h.enqueue("a")
	h.step(9 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"a"}, 10*time.Millisecond)

	// After a quiet spell the next lone event is fast again.
	h.step(200 * time.Millisecond)
	h.enqueue("b")
	h.step(10 * time.Millisecond)
	h.expectFire([]string{"b"}, 10*time.Millisecond)
}

func TestLeadingDelayMergesAPairAndExtends(t *testing.T) {
	h := newHarness(t, adaptiveOptions())
	h.run()
	h.enqueue("a")
	h.step(5 * time.Millisecond)
	h.enqueue("b") // an editor's write-then-rename: the same batch
	h.step(5 * time.Millisecond)
	h.expectNoFire() // 10ms after a, but only 5ms after b
	h.step(4 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"a", "b"}, 15*time.Millisecond)
}

func TestLeadingDelayRestOfABurstWaitsTheQuietPeriod(t *testing.T) {
	h := newHarness(t, adaptiveOptions())
	h.run()
	h.enqueue("a")
	h.step(10 * time.Millisecond)
	h.expectFire([]string{"a"}, 10*time.Millisecond)
	// The burst goes on: its later events merge for QuietPeriod.
	for _, v := range []string{"b", "c", "d"} { // at 20, 40, 60ms
		h.step(10 * time.Millisecond)
		h.enqueue(v)
		h.step(10 * time.Millisecond)
		h.expectNoFire()
	}
	h.step(89 * time.Millisecond)
	h.expectNoFire() // 99ms after d
	h.step(time.Millisecond)
	h.expectFire([]string{"b", "c", "d"}, 140*time.Millisecond)
}

func TestLeadingDelayEventsSoonAfterAFireWaitTheQuietPeriod(t *testing.T) {
	h := newHarness(t, adaptiveOptions())
	h.run()
	h.enqueue("a")
	h.step(10 * time.Millisecond)
	h.expectFire([]string{"a"}, 10*time.Millisecond)

	// 30ms after a: the stream was not quiet, so this is the rest of a burst.
	h.step(20 * time.Millisecond)
	h.enqueue("b")
	h.step(10 * time.Millisecond)
	h.expectNoFire()
	h.step(89 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"b"}, 100*time.Millisecond)

	// Exactly QuietPeriod after b counts as quiet.
	h.step(100 * time.Millisecond)
	h.enqueue("c")
	h.step(10 * time.Millisecond)
	h.expectFire([]string{"c"}, 10*time.Millisecond)
}

func TestLeadingDelayStillCappedByMaxDelay(t *testing.T) {
	opts := adaptiveOptions()
	opts.MaxDelay = 30 * time.Millisecond
	h := newHarness(t, opts)
	h.run()
	// Events every 8ms keep the leading delay from passing quietly.
	for _, v := range []string{"a", "b", "c", "d"} { // at 0, 8, 16, 24ms
		h.enqueue(v)
		h.expectNoFire()
		h.step(8 * time.Millisecond)
	}
	// 32ms: past the 30ms cap although d was only 8ms ago.
	h.expectFire([]string{"a", "b", "c", "d"}, 32*time.Millisecond)
}

func TestLeadingDelayNotBelowQuietPeriodIsIgnored(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 20 * time.Millisecond, MaxDelay: time.Second, LeadingDelay: 50 * time.Millisecond})
	h.run()
	h.enqueue("a")
	h.step(19 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"a"}, 20*time.Millisecond)
}

// Flush: a lone batch the source says is whole fires at once; an event
// after the flush makes it wait its leading delay again; a batch in a
// burst keeps its quiet period.
func TestFlushFiresAWholeLoneBatchAtOnce(t *testing.T) {
	h := newHarness(t, adaptiveOptions())
	h.run()
	h.enqueue("a")
	h.enqueue("b")
	h.expectNoFire()
	h.d.Flush()
	h.settle()
	h.expectFire([]string{"a", "b"}, 0)

	// Flushed, then more of it: the leading delay again, from the last event.
	h.step(200 * time.Millisecond)
	h.enqueue("c")
	h.d.Flush()
	h.enqueue("d")
	h.firesAfter(10*time.Millisecond, []string{"c", "d"})

	// A batch within the quiet period of the last is a burst's: Flush does
	// not cut its quiet period short.
	h.step(20 * time.Millisecond)
	h.enqueue("e")
	h.d.Flush()
	h.settle()
	h.firesAfter(100*time.Millisecond, []string{"e"})

	// Flush with nothing pending fires nothing, and the next lone event
	// waits its leading delay as usual.
	h.step(200 * time.Millisecond)
	h.d.Flush()
	h.settle()
	h.expectNoFire()
	h.enqueue("f")
	h.firesAfter(10*time.Millisecond, []string{"f"})
}

// firesAfter checks that the pending batch, enqueued now, fires d from
// now and not a millisecond sooner.
func (h *harness) firesAfter(d time.Duration, want []string) {
	h.t.Helper()
	h.expectNoFire()
	h.step(d - time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire(want, d)
}
