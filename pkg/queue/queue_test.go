package queue

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/test/logbuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const timeout = 10 * time.Second

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// start runs q until the test ends and waits for Run to return.
func start(t *testing.T, q *Queue) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(timeout):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// flush pushes a marker and waits for it: every task due now and queued
// before it has run, and any retry they scheduled is queued.
func flush(t *testing.T, q *Queue) {
	t.Helper()
	done := make(chan struct{})
	q.Push(func() error { close(done); return nil })
	recv(t, done)
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatal("timed out waiting for task")
	}
	var zero T
	return zero
}

// recorder collects task names in the order they ran.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) task(name string) Task {
	return func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ran = append(r.ran, name)
		return nil
	}
}

func (r *recorder) get() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.ran, ",")
}

func TestRunsTasksInPushOrder(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	q := New(Options{Clock: clk})
	var r recorder
	q.Push(r.task("a"))
	q.Push(r.task("b"))
	start(t, q)
	// The running queue waits at the gate while c, the pusher and d are
	// queued, so the task pushed from a task comes after all three.
	gate := make(chan struct{})
	q.Push(func() error { <-gate; return nil })
	q.Push(r.task("c"))
	last := make(chan struct{})
	q.Push(func() error {
		q.Push(func() error { err := r.task("from-task")(); close(last); return err })
		return nil
	})
	q.Push(r.task("d"))
	close(gate)
	recv(t, last)
	if got, want := r.get(), "a,b,c,d,from-task"; got != want {
		t.Fatalf("order = %q, want %q", got, want)
	}
}

func TestTasksNeverRunConcurrently(t *testing.T) {
	q := New(Options{})
	var mu sync.Mutex
	running, maxRunning := 0, 0
	task := func() error {
		mu.Lock()
		running++
		maxRunning = max(maxRunning, running)
		mu.Unlock()
		runtime.Gosched() // widen the window a concurrent task would hit
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}
	start(t, q)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				q.Push(task)
			}
		}()
	}
	wg.Wait()
	flush(t, q)
	if maxRunning != 1 {
		t.Fatalf("max concurrent tasks = %d, want 1", maxRunning)
	}
}

func TestPushDelayedWaitsForClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	q := New(Options{Clock: clk})
	var r recorder
	start(t, q)
	q.PushDelayed(r.task("late"), 2*time.Second)
	q.PushDelayed(r.task("early"), time.Second)
	q.Push(r.task("now"))
	flush(t, q)
	if got := r.get(); got != "now" {
		t.Fatalf("before any step ran %q, want only %q", got, "now")
	}

	clk.Step(time.Second - time.Nanosecond)
	flush(t, q)
	if got := r.get(); got != "now" {
		t.Fatalf("1ns before due ran %q, want only %q", got, "now")
	}

	clk.Step(time.Nanosecond)
	flush(t, q)
	if got, want := r.get(), "now,early"; got != want {
		t.Fatalf("at 1s ran %q, want %q", got, want)
	}

	clk.Step(time.Second)
	flush(t, q)
	if got, want := r.get(), "now,early,late"; got != want {
		t.Fatalf("at 2s ran %q, want %q", got, want)
	}
}

func TestDelayedTaskWakesIdleRun(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	q := New(Options{Clock: clk})
	ran := make(chan struct{})
	start(t, q)
	q.PushDelayed(func() error { close(ran); return nil }, time.Minute)
	// No flush: Run must be parked on the timer, not on a push, when the
	// clock moves.
	clk.Step(time.Minute)
	recv(t, ran)
}

func TestFailedTaskRetriesWithCappedBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	var logs logbuf.Buffer
	q := New(Options{
		Clock:       clk,
		BaseBackoff: 100 * time.Millisecond,
		MaxBackoff:  250 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	attempts := make(chan time.Time, 10)
	failures := 4
	q.Push(func() error {
		attempts <- clk.Now()
		if failures > 0 {
			failures--
			return errors.New("backend unavailable")
		}
		return nil
	})
	var r recorder
	q.Push(r.task("after"))
	start(t, q)

	first := recv(t, attempts)
	flush(t, q)
	if got := r.get(); got != "after" {
		t.Fatalf("a failing task held back later tasks: ran %q", got)
	}

	// Expected delays between attempts: 100ms, 200ms, then capped at 250ms.
	last := first
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond} {
		clk.Step(want - time.Nanosecond)
		flush(t, q)
		select {
		case <-attempts:
			t.Fatalf("retry %d ran before its %v backoff", i+1, want)
		default:
		}
		clk.Step(time.Nanosecond)
		at := recv(t, attempts)
		flush(t, q) // the next retry is scheduled before the clock moves again
		if got := at.Sub(last); got != want {
			t.Fatalf("retry %d after %v, want %v", i+1, got, want)
		}
		last = at
	}
	// The fifth attempt succeeded: no more retries.
	clk.Step(time.Hour)
	flush(t, q)
	select {
	case <-attempts:
		t.Fatal("task retried after it succeeded")
	default:
	}

	out := logs.String()
	if n := strings.Count(out, "backend unavailable"); n != 4 {
		t.Fatalf("logged %d failures, want 4:\n%s", n, out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "attempt=4") {
		t.Fatalf("failure log lacks level or attempt count:\n%s", out)
	}
}

func TestHasSynced(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	q := New(Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if q.HasSynced() {
		t.Fatal("HasSynced before Run")
	}
	var duringLast bool
	q.Push(func() error { return errors.New("fails once, still counts as processed") })
	q.Push(func() error { duringLast = q.HasSynced(); return nil })
	start(t, q)
	// Twice: the first flush's task may be pushed before Run starts, and
	// so be initial itself, counted only after it returns; the second is
	// pushed once it has run, and runs after it returned.
	flush(t, q)
	flush(t, q)
	if duringLast {
		t.Fatal("HasSynced was true while an initial task was still running")
	}
	if !q.HasSynced() {
		t.Fatal("HasSynced false after every initial task ran")
	}

	// Work pushed after Run started does not unsync the queue.
	release := make(chan struct{})
	started := make(chan struct{})
	q.Push(func() error { close(started); <-release; return nil })
	recv(t, started)
	if !q.HasSynced() {
		t.Fatal("HasSynced went false for a task pushed after Run")
	}
	close(release)
}

func TestHasSyncedEmptyQueue(t *testing.T) {
	q := New(Options{Clock: clocktesting.NewFakeClock(epoch)})
	start(t, q)
	// The first flush's task may be pushed before Run starts, making it an
	// initial task whose bookkeeping ends just after it runs; the second
	// runs only after that.
	flush(t, q)
	flush(t, q)
	if !q.HasSynced() {
		t.Fatal("an empty queue is synced once Run starts")
	}
}

func TestHasSyncedWaitsForInitialDelayedTask(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	q := New(Options{Clock: clk})
	ran := make(chan struct{})
	q.PushDelayed(func() error { close(ran); return nil }, time.Second)
	start(t, q)
	flush(t, q)
	if q.HasSynced() {
		t.Fatal("HasSynced before the delayed initial task ran")
	}
	clk.Step(time.Second)
	recv(t, ran)
	flush(t, q)
	if !q.HasSynced() {
		t.Fatal("HasSynced false after the delayed initial task ran")
	}
}

func TestRunReturnsOnCancelWithPendingWork(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	q := New(Options{Clock: clk})
	stop := start(t, q)
	var r recorder
	q.PushDelayed(r.task("never"), time.Hour)
	flush(t, q)
	stop()
	clk.Step(2 * time.Hour)
	if got := r.get(); got != "" {
		t.Fatalf("task ran after Run returned: %q", got)
	}
}

func TestSecondRunReturnsImmediately(t *testing.T) {
	var logs logbuf.Buffer
	q := New(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	start(t, q)
	flush(t, q) // the first Run is active
	q.Run(context.Background())
	if !strings.Contains(logs.String(), "more than once") {
		t.Fatalf("second Run not reported:\n%s", logs.String())
	}
}

func TestDefaults(t *testing.T) {
	q := New(Options{})
	if q.base != 100*time.Millisecond || q.max != 30*time.Second {
		t.Fatalf("defaults base=%v max=%v, want 100ms and 30s", q.base, q.max)
	}
	if got := q.backoff(1); got != 100*time.Millisecond {
		t.Fatalf("backoff(1) = %v", got)
	}
	if got := q.backoff(9); got != 25600*time.Millisecond {
		t.Fatalf("backoff(9) = %v", got)
	}
	if got := q.backoff(1000); got != 30*time.Second {
		t.Fatalf("backoff(1000) = %v, want the 30s cap", got)
	}
}
