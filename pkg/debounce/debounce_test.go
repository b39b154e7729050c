package debounce

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const timeout = 10 * time.Second

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fired is one call of fire, with what OnFire reported just before it.
type fired struct {
	value  []string
	merged int
	waited time.Duration
}

// harness wires a Debouncer[[]string] to a fake clock and records fires.
type harness struct {
	t     *testing.T
	clk   *clocktesting.FakeClock
	d     *Debouncer[[]string]
	fires chan fired
	// hold, when set, is called inside fire before it returns.
	hold func()

	mu       sync.Mutex
	lastOn   fired
	active   atomic.Int32
	overlaps atomic.Int32
}

func newHarness(t *testing.T, opts Options) *harness {
	h := &harness{t: t, clk: clocktesting.NewFakeClock(epoch), fires: make(chan fired, 16)}
	opts.Clock = h.clk
	opts.OnFire = func(merged int, waited time.Duration) {
		h.mu.Lock()
		h.lastOn = fired{merged: merged, waited: waited}
		h.mu.Unlock()
	}
	merge := func(a, b []string) []string { return append(slices.Clip(a), b...) }
	h.d = New(opts, merge, func(v []string) {
		if h.active.Add(1) > 1 {
			h.overlaps.Add(1)
		}
		defer h.active.Add(-1)
		h.mu.Lock()
		f := h.lastOn
		hold := h.hold
		h.mu.Unlock()
		f.value = v
		h.fires <- f
		if hold != nil {
			hold()
		}
	})
	return h
}

// run starts Run until the test ends; stop cancels and waits for it.
func (h *harness) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(timeout):
				h.t.Error("Run did not return after cancel")
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

// settle waits until Run has seen every event and the current time, and
// has finished any fire that was due.
func (h *harness) settle() {
	h.t.Helper()
	ch := make(chan struct{})
	select {
	case h.d.settle <- ch:
	case <-time.After(timeout):
		h.t.Fatal("Run did not take the settle request")
	}
	select {
	case <-ch:
	case <-time.After(timeout):
		h.t.Fatal("Run did not settle")
	}
}

func (h *harness) step(d time.Duration) {
	h.clk.Step(d)
	h.settle()
}

func (h *harness) enqueue(v string) {
	h.d.Enqueue([]string{v})
	h.settle()
}

func (h *harness) expectNoFire() {
	h.t.Helper()
	select {
	case f := <-h.fires:
		h.t.Fatalf("unexpected fire %v", f.value)
	default:
	}
}

func (h *harness) expectFire(want []string, waited time.Duration) {
	h.t.Helper()
	var f fired
	select {
	case f = <-h.fires:
	case <-time.After(timeout):
		h.t.Fatalf("no fire; want %v", want)
	}
	if !slices.Equal(f.value, want) {
		h.t.Fatalf("fired %v, want %v", f.value, want)
	}
	if f.merged != len(want) || f.waited != waited {
		h.t.Fatalf("OnFire(merged=%d, waited=%v), want (%d, %v)", f.merged, f.waited, len(want), waited)
	}
}

func TestFiresAfterQuietPeriod(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	h.run()
	h.settle()
	h.expectNoFire() // nothing enqueued, nothing fires

	h.enqueue("a")
	h.step(99 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"a"}, 100*time.Millisecond)
	h.step(time.Hour)
	h.expectNoFire()
}

func TestQuietPeriodResetsOnEachEvent(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	h.run()
	h.enqueue("a")
	h.step(50 * time.Millisecond)
	h.enqueue("b")
	h.step(60 * time.Millisecond) // 110ms after a, 60ms after b
	h.expectNoFire()
	h.step(39 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond) // 100ms after b
	h.expectFire([]string{"a", "b"}, 150*time.Millisecond)
}

func TestMaxDelayCapsAContinuousStream(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond})
	h.run()
	for _, v := range []string{"a", "b", "c", "d"} { // at 0, 80, 160, 240ms
		h.enqueue(v)
		h.expectNoFire()
		h.step(80 * time.Millisecond)
	}
	// Now 320ms: the cap at 300ms has passed even though d was 80ms ago.
	// The fake clock jumped over 300ms, so the wait measured is 320ms.
	h.expectFire([]string{"a", "b", "c", "d"}, 320*time.Millisecond)

	// The next batch starts its own max-delay window.
	h.enqueue("e")
	h.step(99 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"e"}, 100*time.Millisecond)
}

func TestMaxDelayFiresExactlyAtCap(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: 150 * time.Millisecond})
	h.run()
	h.enqueue("a")
	h.step(90 * time.Millisecond)
	h.enqueue("b") // quiet would end at 190ms; the cap ends at 150ms
	h.step(59 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"a", "b"}, 150*time.Millisecond)
}

func TestMergesInEnqueueOrder(t *testing.T) {
	h := newHarness(t, Options{})
	h.run()
	for _, v := range []string{"1", "2", "3", "4", "5"} {
		h.d.Enqueue([]string{v})
	}
	h.step(defaultQuietPeriod)
	h.expectFire([]string{"1", "2", "3", "4", "5"}, defaultQuietPeriod)
}

func TestEventsDuringFireAreMergedAndFireAfterIt(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	release := make(chan struct{})
	h.hold = func() { <-release }
	h.run()

	h.enqueue("a")
	h.clk.Step(100 * time.Millisecond) // no settle: the fire blocks in hold
	h.expectFire([]string{"a"}, 100*time.Millisecond)

	// The first fire is still running. New events merge; the clock moves
	// past their quiet period, yet nothing fires while the first runs.
	h.d.Enqueue([]string{"b"})
	h.clk.Step(10 * time.Millisecond)
	h.d.Enqueue([]string{"c"})
	h.clk.Step(200 * time.Millisecond)
	h.expectNoFire()

	h.mu.Lock()
	h.hold = nil
	h.mu.Unlock()
	close(release)
	h.expectFire([]string{"b", "c"}, 210*time.Millisecond)
	h.settle()
	if n := h.overlaps.Load(); n != 0 {
		t.Fatalf("%d fires overlapped", n)
	}
}

func TestEventsDuringFireStillWaitForQuiet(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	release := make(chan struct{})
	h.hold = func() { <-release }
	h.run()

	h.enqueue("a")
	h.clk.Step(100 * time.Millisecond)
	h.expectFire([]string{"a"}, 100*time.Millisecond)
	h.d.Enqueue([]string{"b"})
	h.mu.Lock()
	h.hold = nil
	h.mu.Unlock()
	close(release)

	// The first fire has returned but b arrived 0ms ago: wait for quiet.
	h.settle()
	h.expectNoFire()
	h.step(99 * time.Millisecond)
	h.expectNoFire()
	h.step(time.Millisecond)
	h.expectFire([]string{"b"}, 100*time.Millisecond)
}

func TestFireMayEnqueue(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	var once sync.Once
	h.hold = func() { once.Do(func() { h.d.Enqueue([]string{"follow-up"}) }) }
	h.run()
	h.enqueue("a")
	h.step(100 * time.Millisecond)
	h.expectFire([]string{"a"}, 100*time.Millisecond)
	h.step(100 * time.Millisecond)
	h.expectFire([]string{"follow-up"}, 100*time.Millisecond)
}

func TestConcurrentEnqueueLosesNothing(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	h.run()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				h.d.Enqueue([]string{string(rune('a'+g)) + string(rune('0'+i%10))})
			}
		}()
	}
	wg.Wait()
	h.step(100 * time.Millisecond)
	f := <-h.fires
	if len(f.value) != 100 || f.merged != 100 {
		t.Fatalf("fired %d values (OnFire merged=%d), want 100", len(f.value), f.merged)
	}
}

func TestCancelDropsPendingBatch(t *testing.T) {
	h := newHarness(t, Options{QuietPeriod: 100 * time.Millisecond, MaxDelay: time.Second})
	stop := h.run()
	h.enqueue("a")
	stop()
	h.clk.Step(time.Hour)
	h.expectNoFire()
}

func TestRunReturnsWhenCancelledIdle(t *testing.T) {
	d := New(Options{}, func(a, b int) int { return a + b }, func(int) { t.Error("fired with no events") })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.Run(ctx) // returns at once
}

func TestDefaults(t *testing.T) {
	d := New(Options{}, func(a, b int) int { return a + b }, func(int) {})
	if d.quiet != 100*time.Millisecond || d.maxDelay != 10*time.Second {
		t.Fatalf("defaults quiet=%v max=%v, want 100ms and 10s", d.quiet, d.maxDelay)
	}
}

func TestRealClockFires(t *testing.T) {
	got := make(chan int, 1)
	d := New(Options{QuietPeriod: time.Millisecond}, func(a, b int) int { return a + b }, func(v int) { got <- v })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	d.Enqueue(2)
	d.Enqueue(3)
	// A slow scheduler may split the two events into two fires; either
	// way their sum arrives.
	sum := 0
	for sum < 5 {
		select {
		case v := <-got:
			sum += v
		case <-time.After(timeout):
			t.Fatalf("no fire with the real clock (sum so far %d)", sum)
		}
	}
	if sum != 5 {
		t.Fatalf("fired sum %d, want 5", sum)
	}
}
