package jwks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyA = `{"keys":[{"kty":"RSA","kid":"a","e":"AQAB","n":"abc"}]}`
	keyB = `{"keys":[{"kty":"RSA","kid":"b","e":"AQAB","n":"def"}]}`
)

// keyServer is a JWKS server on 127.0.0.1 whose answer tests change.
type keyServer struct {
	*httptest.Server
	mu     sync.Mutex
	body   string
	status int
	hits   atomic.Int64
	// block, when set, holds each request until it is closed or the
	// client gives up.
	block chan struct{}
}

func newKeyServer(t *testing.T, body string) *keyServer {
	t.Helper()
	s := &keyServer{body: body, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, status, block := s.body, s.status, s.block
		s.mu.Unlock()
		if block != nil {
			select {
			case <-block:
			case <-r.Context().Done():
				return
			}
		}
		if r.URL.Path == openIDDiscoverySuffix {
			fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, s.URL, s.URL+"/keys")
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *keyServer) set(body string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.status = body, status
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	r       *Resolver
	clk     *clocktesting.FakeClock
	changes atomic.Int64
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{clk: clocktesting.NewFakeClock(epoch)}
	opts.Clock = h.clk
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.OnChange = func() { h.changes.Add(1) }
	h.r = New(opts)
	return h
}

// run starts Run and stops it (waiting for it) at the end of the test.
func (h *harness) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h.waitArmed(t)
}

// waitArmed waits until Run has set its refresh timer.
func (h *harness) waitArmed(t *testing.T) {
	t.Helper()
	poll.Until(t, "Run's refresh timer", h.clk.HasWaiters)
}

func TestFetchAndCache(t *testing.T) {
	srv := newKeyServer(t, keyA)
	h := newHarness(t, Options{})
	for range 3 {
		got, err := h.r.JWKS("https://issuer", srv.URL+"/keys", time.Second)
		if err != nil || got != keyA {
			t.Fatalf("JWKS = %q, %v; want keyA", got, err)
		}
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("server hit %d times, want 1 (cached)", n)
	}
}

func TestOpenIDDiscoveryWhenJwksURIEmpty(t *testing.T) {
	srv := newKeyServer(t, keyA)
	h := newHarness(t, Options{})
	got, err := h.r.JWKS(srv.URL+"/", "", time.Second)
	if err != nil || got != keyA {
		t.Fatalf("JWKS = %q, %v; want keyA via discovery", got, err)
	}
	if n := srv.hits.Load(); n != 2 {
		t.Errorf("server hit %d times, want 2 (discovery + keys)", n)
	}
}

func TestConcurrentCallersShareOneFetch(t *testing.T) {
	srv := newKeyServer(t, keyA)
	release := make(chan struct{})
	srv.block = release
	h := newHarness(t, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := h.r.JWKS("iss", srv.URL, 30*time.Second)
			if err == nil && got != keyA {
				err = fmt.Errorf("got %q", got)
			}
			errs <- err
		}()
	}
	poll.Until(t, "the first fetch to reach the server", func() bool { return srv.hits.Load() == 1 })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("server hit %d times, want 1", n)
	}
}

func TestRefreshPicksUpRotatedKey(t *testing.T) {
	srv := newKeyServer(t, keyA)
	h := newHarness(t, Options{})
	if got, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil || got != keyA {
		t.Fatalf("JWKS = %q, %v", got, err)
	}
	h.run(t)
	srv.set(keyB, http.StatusOK)
	h.clk.Step(DefaultRefreshInterval)
	poll.Until(t, "OnChange after the rotation", func() bool { return h.changes.Load() == 1 })
	if got, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil || got != keyB {
		t.Fatalf("after refresh JWKS = %q, %v; want keyB", got, err)
	}

	// The same keys in another order and spacing are no change.
	h.waitArmed(t)
	srv.set(`{"keys":[ {"kty":"RSA","kid":"b","e":"AQAB","n":"def"} ]}`, http.StatusOK)
	h.clk.Step(DefaultRefreshInterval)
	poll.Until(t, "the second refresh", func() bool { return srv.hits.Load() == 3 })
	h.waitArmed(t)
	if n := h.changes.Load(); n != 1 {
		t.Errorf("OnChange called %d times, want 1 (reformatted keys are no change)", n)
	}
}

func TestFailureFailsClosedThenRecovers(t *testing.T) {
	srv := newKeyServer(t, "boom")
	srv.set("boom", http.StatusInternalServerError)
	h := newHarness(t, Options{RefreshRetries: -1})
	_, err := h.r.JWKS("iss", srv.URL, time.Second)
	if !errors.Is(err, ErrNoKeySet) || !strings.Contains(err.Error(), "status 500") {
		t.Fatalf("err = %v; want ErrNoKeySet with the status", err)
	}
	// The failure is cached: translation is not held up by a second fetch.
	if _, err := h.r.JWKS("iss", srv.URL, time.Second); !errors.Is(err, ErrNoKeySet) {
		t.Fatalf("second call err = %v", err)
	}
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("server hit %d times, want 1", n)
	}
	// Run retries the failed entry at once (no timer step needed) and
	// reports the change so the server pushes the real key set.
	srv.set(keyA, http.StatusOK)
	h.run(t)
	poll.Until(t, "OnChange after the retry", func() bool { return h.changes.Load() == 1 })
	if got, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil || got != keyA {
		t.Fatalf("JWKS = %q, %v; want keyA", got, err)
	}
}

func TestFailedRetryDropsEntrySoNextCallFetches(t *testing.T) {
	srv := newKeyServer(t, "")
	srv.set("nope", http.StatusNotFound)
	h := newHarness(t, Options{RefreshRetries: -1})
	if _, err := h.r.JWKS("iss", srv.URL, time.Second); err == nil {
		t.Fatal("want an error")
	}
	h.run(t)
	poll.Until(t, "the failed entry to be dropped", func() bool { return h.r.Len() == 0 })
	srv.set(keyA, http.StatusOK)
	if got, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil || got != keyA {
		t.Fatalf("JWKS = %q, %v; want keyA", got, err)
	}
}

func TestNotAJWKSIsRefused(t *testing.T) {
	srv := newKeyServer(t, `{"secret":"internal"}`)
	h := newHarness(t, Options{})
	_, err := h.r.JWKS("iss", srv.URL, time.Second)
	if err == nil || !strings.Contains(err.Error(), `missing "keys"`) {
		t.Fatalf("err = %v; want not a JWKS", err)
	}
}

func TestOversizeIsRefused(t *testing.T) {
	big := `{"keys":[],"pad":"` + strings.Repeat("x", DefaultMaxResponseBytes) + `"}`
	srv := newKeyServer(t, big)
	h := newHarness(t, Options{})
	_, err := h.r.JWKS("iss", srv.URL, 5*time.Second)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v; want ErrTooLarge", err)
	}
	// Just under the limit is fine.
	ok := `{"keys":[],"pad":"` + strings.Repeat("x", DefaultMaxResponseBytes-100) + `"}`
	srv.set(ok, http.StatusOK)
	if _, err := h.r.JWKS("iss2", srv.URL, 5*time.Second); err != nil {
		t.Fatalf("under the limit: %v", err)
	}
}

func TestSlowServerTimesOut(t *testing.T) {
	srv := newKeyServer(t, keyA)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv.block = release
	h := newHarness(t, Options{})
	start := time.Now()
	_, err := h.r.JWKS("iss", srv.URL, 100*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want a deadline error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("fetch took %v, the timeout was 100ms", d)
	}
}

func TestBlockedAddressIsRefused(t *testing.T) {
	h := newHarness(t, Options{})
	_, err := h.r.JWKS("iss", "http://169.254.169.254/latest/meta-data", time.Second)
	if err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Fatalf("err = %v; want link-local refused", err)
	}
	if _, err := h.r.JWKS("iss", "file:///etc/passwd", time.Second); err == nil {
		t.Fatal("file:// accepted")
	}
}

func TestUnusedEntriesAreEvicted(t *testing.T) {
	srv := newKeyServer(t, keyA)
	h := newHarness(t, Options{EvictionDuration: 30 * time.Minute})
	if _, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	h.run(t)
	h.clk.Step(DefaultRefreshInterval) // 20m unused: refreshed, kept
	poll.Until(t, "the first refresh", func() bool { return srv.hits.Load() == 2 })
	h.waitArmed(t)
	if h.r.Len() != 1 {
		t.Fatal("entry evicted too early")
	}
	h.clk.Step(DefaultRefreshInterval) // 40m unused: evicted, not fetched
	poll.Until(t, "eviction", func() bool { return h.r.Len() == 0 })
	if n := srv.hits.Load(); n != 2 {
		t.Errorf("server hit %d times, want 2 (an evicted entry is not fetched)", n)
	}
}

func TestRefreshBackoff(t *testing.T) {
	srv := newKeyServer(t, keyA)
	h := newHarness(t, Options{RefreshRetries: -1})
	if _, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil {
		t.Fatal(err)
	}
	h.run(t)
	srv.set("down", http.StatusServiceUnavailable)
	step := func(d time.Duration, wantHits int64) {
		t.Helper()
		h.clk.Step(d)
		poll.Until(t, fmt.Sprintf("%d fetches", wantHits), func() bool { return srv.hits.Load() == wantHits })
		h.waitArmed(t)
	}
	step(DefaultRefreshInterval, 2)          // fails: next in 1m
	step(DefaultRefreshIntervalOnFailure, 3) // fails again: next in 2m
	h.clk.Step(2*time.Minute - time.Second)
	if n := srv.hits.Load(); n != 3 {
		t.Fatalf("refreshed after %v, backoff should be 2m", 2*time.Minute-time.Second)
	}
	step(time.Second, 4)   // next in 4m
	step(4*time.Minute, 5) // next in 8m
	srv.set(keyA, http.StatusOK)
	step(8*time.Minute, 6) // succeeds: back to 20m
	h.clk.Step(16 * time.Minute)
	if n := srv.hits.Load(); n != 6 {
		t.Fatalf("refreshed before the default interval after a success")
	}
	step(4*time.Minute, 7)
	// A failing refresh keeps the last good key set.
	if got, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil || got != keyA {
		t.Fatalf("JWKS = %q, %v", got, err)
	}
}

func TestDiffer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{keyA, keyA, false},
		{keyA, keyB, true},
		{`{"keys":[{"kid":"1"},{"kid":"2"}]}`, `{"keys":[{"kid":"2"},{"kid":"1"}]}`, false},
		{"", keyA, true},
		{`{"x":1}`, `{"x":2}`, true},
	} {
		if got := Differ(tc.a, tc.b); got != tc.want {
			t.Errorf("Differ(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestRefreshGoroutinesAreBounded: a refresh of many entries never has
// more than MaxConcurrentFetches requests in flight.
func TestRefreshGoroutinesAreBounded(t *testing.T) {
	var inFlight, maxInFlight atomic.Int64
	release := make(chan struct{})
	var gate atomic.Bool // hold refresh requests only
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		if gate.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte(keyA))
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	h := newHarness(t, Options{MaxConcurrentFetches: 2, Registry: reg})
	for i := range 6 {
		if _, err := h.r.JWKS("iss", fmt.Sprintf("%s/%d", srv.URL, i), 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	maxInFlight.Store(0)
	gate.Store(true)
	h.run(t)
	h.clk.Step(DefaultRefreshInterval)
	poll.Until(t, "two refresh fetches in flight", func() bool { return inFlight.Load() == 2 })
	close(release)
	h.waitArmed(t)
	if m := maxInFlight.Load(); m != 2 {
		t.Errorf("at most %d fetches in flight, want 2", m)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		got[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
	}
	want := map[string]float64{
		"pilot_jwks_resolver_network_fetch_success_total": 12,
		"pilot_jwks_resolver_network_fetch_fail_total":    0,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (registered %v), want %v", name, g, ok, v)
		}
	}
}

// An Async resolver never waits for the network: a key set not cached is
// ErrPending at once (served fail-closed), Run fetches it and OnChange
// asks for the push that serves it; a server that never answers holds
// nobody.
func TestAsyncNeverWaits(t *testing.T) {
	srv := newKeyServer(t, keyA)
	h := newHarness(t, Options{Async: true})
	h.run(t)
	if _, err := h.r.JWKS("iss", srv.URL, time.Second); !errors.Is(err, ErrPending) || !errors.Is(err, ErrNoKeySet) {
		t.Fatalf("first call: err %v, want ErrPending (wrapping ErrNoKeySet)", err)
	}
	poll.Until(t, "OnChange after the background fetch", func() bool { return h.changes.Load() == 1 })
	if got, err := h.r.JWKS("iss", srv.URL, time.Second); err != nil || got != keyA {
		t.Fatalf("after the fetch JWKS = %q, %v", got, err)
	}

	hang := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); stuck.Close() })
	done := make(chan error, 1)
	go func() { _, err := h.r.JWKS("other", stuck.URL, time.Hour); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrPending) {
			t.Errorf("hanging server: err %v, want ErrPending", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("JWKS waited for a server that never answers")
	}
}
