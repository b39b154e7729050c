// Package debounce merges bursts of events into one call. Config changes
// arrive in bursts (an editor saving several files, a kubectl apply of a
// folder); recomputing and pushing config for each would waste work and
// flood proxies, so events are merged until the stream goes quiet or a
// maximum delay passes, the way Istio debounces push requests.
//
// A fixed quiet period taxes every change, though: a lone edit (one
// VirtualService changed) waits the whole quiet period although nothing
// follows it, and at 100ms that alone is most of a small mesh's update
// latency. With Options.LeadingDelay set, the quiet period adapts to the
// stream: a batch that begins after the stream has been silent for
// QuietPeriod fires once LeadingDelay (a few milliseconds) passes without
// another event, so a lone change, or an editor's write-then-rename pair,
// is pushed almost at once. Events that arrive within QuietPeriod of
// earlier ones start a batch that waits the full QuietPeriod, so a burst
// costs at most one early fire (its first events) and then merges as
// before; MaxDelay caps every batch.
package debounce

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Options configure a Debouncer. Zero values take the defaults.
type Options struct {
	// QuietPeriod is how long the event stream must be silent before the
	// merged value fires. Defaults to 100ms.
	QuietPeriod time.Duration
	// MaxDelay caps how long the first event of a batch waits, so a
	// steady stream of events cannot postpone a fire forever. Defaults to
	// 10s.
	MaxDelay time.Duration
	// LeadingDelay, when positive, makes debouncing adaptive: a batch
	// whose first event follows at least QuietPeriod without events fires
	// once LeadingDelay passes without another event, instead of
	// QuietPeriod (see the package comment). Zero keeps the fixed quiet
	// period; values at or above QuietPeriod change nothing.
	LeadingDelay time.Duration
	// Clock drives the timers; defaults to the real clock.
	Clock clock.WithTicker
	// OnFire, if set, is called just before each fire with the number of
	// events merged and the time since the first of them, for metrics.
	OnFire func(merged int, waited time.Duration)
}

const (
	defaultQuietPeriod = 100 * time.Millisecond
	defaultMaxDelay    = 10 * time.Second
)

// Debouncer merges values of type T enqueued in bursts and hands the
// merged value to a fire function. Fires run on the Run goroutine, one at
// a time; events that arrive during a fire are merged into the next batch.
type Debouncer[T any] struct {
	quiet    time.Duration
	maxDelay time.Duration
	leading  time.Duration
	clock    clock.WithTicker
	onFire   func(int, time.Duration)
	merge    func(a, b T) T
	fire     func(T)

	// wake holds at most one token: it tells a waiting Run that the
	// pending batch changed.
	wake chan struct{}
	// settle lets tests wait until Run has acted on the current clock
	// time and every event enqueued so far.
	settle chan chan struct{}

	mu      sync.Mutex
	pending T
	count   int
	first   time.Time
	last    time.Time
	// seen is set once any event was enqueued; last then holds the time
	// of the latest event, across batches.
	seen bool
	// lone is set when the pending batch began after a quiet spell, so it
	// waits only the leading delay.
	lone bool
	// complete is set by Flush: the pending lone batch is whole and fires
	// without waiting out its leading delay.
	complete bool
}

// New returns a Debouncer. merge combines an earlier value a with a later
// value b; fire receives the merged batch.
func New[T any](opts Options, merge func(a, b T) T, fire func(T)) *Debouncer[T] {
	if opts.QuietPeriod <= 0 {
		opts.QuietPeriod = defaultQuietPeriod
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = defaultMaxDelay
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Debouncer[T]{
		quiet:    opts.QuietPeriod,
		maxDelay: opts.MaxDelay,
		leading:  opts.LeadingDelay,
		clock:    opts.Clock,
		onFire:   opts.OnFire,
		merge:    merge,
		fire:     fire,
		wake:     make(chan struct{}, 1),
		settle:   make(chan chan struct{}),
	}
}

// Enqueue adds v to the pending batch. It never blocks on a running fire.
func (d *Debouncer[T]) Enqueue(v T) {
	d.mu.Lock()
	now := d.clock.Now()
	if d.count == 0 {
		d.pending = v
		d.first = now
		d.lone = d.leading > 0 && d.leading < d.quiet && (!d.seen || now.Sub(d.last) >= d.quiet)
	} else {
		d.pending = d.merge(d.pending, v)
	}
	d.count++
	d.last = now
	d.seen = true
	d.complete = false
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Flush tells the debouncer that the events enqueued so far are a whole
// batch, as a source that delivers changes in batches knows (file mode:
// every change one rescan found). A lone batch then fires at once instead
// of at the end of its leading delay, which exists only to catch the rest
// of such a batch; a batch in a burst still waits its quiet period, and an
// event enqueued after Flush makes the batch wait as usual again.
func (d *Debouncer[T]) Flush() {
	d.mu.Lock()
	d.complete = d.count > 0 && d.lone
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run fires merged batches until ctx is cancelled. A batch pending at
// cancellation is dropped. Run must be called once; it starts no
// goroutines.
func (d *Debouncer[T]) Run(ctx context.Context) {
	var settled []chan struct{}
	for ctx.Err() == nil {
		v, n, waited, deadline, ready := d.take()
		if ready {
			if d.onFire != nil {
				d.onFire(n, waited)
			}
			d.fire(v)
			continue
		}
		for _, ch := range settled {
			close(ch)
		}
		settled = nil
		if ch, ok := d.wait(ctx, deadline); ok && ch != nil {
			settled = append(settled, ch)
		}
	}
}

// take removes the pending batch if it is due. Otherwise it returns when
// the batch will be due, or the zero time when nothing is pending.
func (d *Debouncer[T]) take() (v T, n int, waited time.Duration, deadline time.Time, ready bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.count == 0 {
		return v, 0, 0, time.Time{}, false
	}
	now := d.clock.Now()
	wait := d.quiet
	if d.lone {
		wait = d.leading
	}
	if d.complete {
		wait = 0
	}
	deadline = d.last.Add(wait)
	if capAt := d.first.Add(d.maxDelay); capAt.Before(deadline) {
		deadline = capAt
	}
	if now.Before(deadline) {
		return v, 0, 0, deadline, false
	}
	v, n, waited = d.pending, d.count, now.Sub(d.first)
	var zero T
	d.pending, d.count, d.complete = zero, 0, false
	return v, n, waited, time.Time{}, true
}

// wait blocks until deadline (if not zero), an event, a settle request or
// cancellation. It reports false on cancellation.
func (d *Debouncer[T]) wait(ctx context.Context, deadline time.Time) (chan struct{}, bool) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := d.clock.NewTimer(deadline.Sub(d.clock.Now()))
		defer t.Stop()
		// A fake clock stepped between reading Now and arming the timer
		// would leave the timer one step late.
		if !d.clock.Now().Before(deadline) {
			return nil, true
		}
		timeout = t.C()
	}
	select {
	case <-ctx.Done():
		return nil, false
	case <-d.wake:
	case <-timeout:
	case ch := <-d.settle:
		return ch, true
	}
	return nil, true
}
