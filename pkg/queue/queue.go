// Package queue runs tasks one at a time, in order, on the goroutine that
// calls Run. Config sources push their add/update/delete notifications here
// so that event handlers never run concurrently and never see events out of
// order. A task that fails is retried later with capped exponential backoff;
// the retry is re-queued with a delay, so it never holds back later tasks.
package queue

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Task is one unit of work. A non-nil error schedules a retry.
type Task func() error

// Options configure a Queue. Zero values take the defaults.
type Options struct {
	// Clock drives delays and backoff; defaults to the real clock.
	Clock clock.WithTicker
	// BaseBackoff is the delay before the first retry of a failed task;
	// each further failure doubles it. Defaults to 100ms.
	BaseBackoff time.Duration
	// MaxBackoff caps the retry delay. Defaults to 30s.
	MaxBackoff time.Duration
	// Logger receives task failures; defaults to slog.Default().
	Logger *slog.Logger
}

const (
	defaultBaseBackoff = 100 * time.Millisecond
	defaultMaxBackoff  = 30 * time.Second
)

// Queue is a delayed task queue. Tasks run in order of due time, ties in
// push order. Push and PushDelayed are safe from any goroutine, including
// from within a running task.
type Queue struct {
	clock clock.WithTicker
	base  time.Duration
	max   time.Duration
	log   *slog.Logger

	// wake holds at most one token: it tells a waiting Run that the head
	// of the queue may have changed.
	wake chan struct{}

	mu      sync.Mutex
	items   itemHeap
	seq     uint64
	started bool
	// initialLeft counts the tasks pushed before Run started that have
	// not run yet.
	initialLeft int
	synced      atomic.Bool
}

// New returns an empty queue; nothing runs until Run is called.
func New(opts Options) *Queue {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = defaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = defaultMaxBackoff
	}
	if opts.MaxBackoff < opts.BaseBackoff {
		opts.MaxBackoff = opts.BaseBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Queue{
		clock: opts.Clock,
		base:  opts.BaseBackoff,
		max:   opts.MaxBackoff,
		log:   opts.Logger,
		wake:  make(chan struct{}, 1),
	}
}

// Push queues task to run as soon as the tasks ahead of it have run.
func (q *Queue) Push(task Task) { q.PushDelayed(task, 0) }

// PushDelayed queues task to run no earlier than delay from now.
func (q *Queue) PushDelayed(task Task, delay time.Duration) {
	q.push(&item{task: task}, delay)
}

func (q *Queue) push(it *item, delay time.Duration) {
	if delay < 0 {
		delay = 0
	}
	q.mu.Lock()
	it.due = q.clock.Now().Add(delay)
	it.seq = q.seq
	q.seq++
	heap.Push(&q.items, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// HasSynced reports whether every task pushed before Run started has run
// at least once. A task that failed counts as processed: its retries are
// ordinary delayed work and do not hold back sync.
func (q *Queue) HasSynced() bool { return q.synced.Load() }

// Run processes tasks until ctx is cancelled. It must be called once; a
// second call logs an error and returns. Run starts no goroutines: tasks
// run on the caller's goroutine.
func (q *Queue) Run(ctx context.Context) {
	q.mu.Lock()
	if q.started {
		q.mu.Unlock()
		q.log.Error("queue: Run called more than once; ignoring")
		return
	}
	q.started = true
	for _, it := range q.items {
		it.initial = true
	}
	q.initialLeft = len(q.items)
	q.synced.Store(q.initialLeft == 0)
	q.mu.Unlock()

	for ctx.Err() == nil {
		it, deadline := q.next()
		if it != nil {
			q.run(it)
			continue
		}
		if !q.wait(ctx, deadline) {
			return
		}
	}
}

// next pops the head if it is due. Otherwise it returns the head's due
// time, or the zero time when the queue is empty.
func (q *Queue) next() (*item, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil, time.Time{}
	}
	head := q.items[0]
	if head.due.After(q.clock.Now()) {
		return nil, head.due
	}
	return heap.Pop(&q.items).(*item), time.Time{}
}

// wait blocks until deadline (if not zero), a push, or cancellation. It
// reports false on cancellation.
func (q *Queue) wait(ctx context.Context, deadline time.Time) bool {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := q.clock.NewTimer(deadline.Sub(q.clock.Now()))
		defer t.Stop()
		// The clock may have moved between reading Now and arming the
		// timer; a fake clock stepped in that window would leave the
		// timer one step late.
		if !q.clock.Now().Before(deadline) {
			return true
		}
		timeout = t.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-q.wake:
	case <-timeout:
	}
	return true
}

func (q *Queue) run(it *item) {
	err := it.task()
	if it.initial {
		it.initial = false
		q.mu.Lock()
		q.initialLeft--
		if q.initialLeft == 0 {
			q.synced.Store(true)
		}
		q.mu.Unlock()
	}
	if err == nil {
		return
	}
	it.attempt++
	delay := q.backoff(it.attempt)
	q.log.Warn("queue: task failed; will retry", "error", err, "attempt", it.attempt, "retryIn", delay)
	q.push(it, delay)
}

// backoff returns the delay before retry number attempt (1-based).
func (q *Queue) backoff(attempt int) time.Duration {
	d := q.base
	for i := 1; i < attempt && d < q.max; i++ {
		d *= 2
	}
	return min(d, q.max)
}
