// Package poll waits in tests for state that no event announces (a
// server's counters, an object's status in the API server, a file the
// process wrote). Every wait has a deadline and fails the test with what
// it was waiting for and the last thing it saw; nothing here sleeps for a
// fixed time and hopes.
package poll

import (
	"fmt"
	"testing"
	"time"
)

// DefaultTimeout bounds a wait when no Timeout option is given: long enough
// for a loaded 2-core CI machine to converge a real kube-apiserver.
const DefaultTimeout = 60 * time.Second

// DefaultInterval is the pause between two checks.
const DefaultInterval = 10 * time.Millisecond

// Option changes one wait.
type Option func(*options)

type options struct {
	timeout  time.Duration
	interval time.Duration
	tries    int
}

// Timeout sets the deadline of the wait.
func Timeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Interval sets the pause between checks.
func Interval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// Tries bounds the number of checks as well as the time, for checks that
// are themselves the stimulus (an RPC per check, with no pause between).
func Tries(n int) Option { return func(o *options) { o.tries = n } }

func resolve(opts []Option) options {
	o := options{timeout: DefaultTimeout, interval: DefaultInterval}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Until waits until cond holds, failing the test (t.Fatalf) at the
// deadline with what.
func Until(t testing.TB, what string, cond func() bool, opts ...Option) {
	t.Helper()
	if err := Wait(cond, opts...); err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}

// Seen waits until check reports ok, failing the test at the deadline with
// what and the last description check returned, so a failure says how far
// things got.
func Seen(t testing.TB, what string, check func() (last string, ok bool), opts ...Option) string {
	t.Helper()
	last, err := WaitSeen(check, opts...)
	if err != nil {
		t.Fatalf("timed out waiting for %s: %v; last seen: %s", what, err, last)
	}
	return last
}

// Value waits until get returns a value ok accepts and returns it, failing
// the test at the deadline with what and the last value and error.
func Value[T any](t testing.TB, what string, get func() (T, error), ok func(T) bool, opts ...Option) T {
	t.Helper()
	var (
		v       T
		lastErr error
	)
	_, err := WaitSeen(func() (string, bool) {
		v, lastErr = get()
		if lastErr != nil {
			return "error: " + lastErr.Error(), false
		}
		return fmt.Sprintf("%v", v), ok(v)
	}, opts...)
	if err != nil {
		t.Fatalf("timed out waiting for %s: last value %v, last error %v", what, v, lastErr)
	}
	return v
}

// Wait is Until without a test: it returns an error at the deadline, for
// helpers that report failure their own way.
func Wait(cond func() bool, opts ...Option) error {
	_, err := WaitSeen(func() (string, bool) { return "", cond() }, opts...)
	return err
}

// WaitSeen is Seen without a test.
func WaitSeen(check func() (string, bool), opts ...Option) (string, error) {
	o := resolve(opts)
	deadline := time.Now().Add(o.timeout)
	for n := 1; ; n++ {
		last, ok := check()
		if ok {
			return last, nil
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("no success in %v", o.timeout)
		}
		if o.tries > 0 && n >= o.tries {
			return last, fmt.Errorf("no success in %d tries", n)
		}
		time.Sleep(o.interval)
	}
}
