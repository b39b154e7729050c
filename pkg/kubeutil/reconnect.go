package kubeutil

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/clock"
)

// ReconnectOptions configure WaitForAPIServer.
type ReconnectOptions struct {
	// MinDelay and MaxDelay bound the pause between two attempts at
	// reaching the API server; it doubles from MinDelay up to MaxDelay.
	// Defaults 100ms and 1s: once the API server is back, a waiting watch
	// reaches it within about MaxDelay.
	MinDelay, MaxDelay time.Duration
	// Clock paces the attempts; defaults to the real clock.
	Clock clock.WithTicker
	// Logger receives one line when the API server becomes unreachable and
	// one when it is reachable again; defaults to slog.Default().
	Logger *slog.Logger
}

// WaitForAPIServer returns a rest.Config.WrapTransport that makes the
// informers' list and watch requests (GET with watch=true or a
// resourceVersion) wait while the API server cannot be connected to,
// trying again every MinDelay..MaxDelay, instead of failing at once.
//
// Why: a reflector whose watch fails with "connection refused" waits its
// own exponential backoff (800ms doubling to 30s, with as much jitter
// again) before trying again, and the backoff only resets after two
// minutes of health. After an outage of 15 s the first watch that gets
// through comes 5 to 25 s after the API server is back; after a minute,
// up to a minute. Kept waiting here, the request never fails, so the
// reflector never backs off, and it resumes its watch, from the
// resourceVersion it had, as soon as the API server answers.
//
// Only connection failures are waited out (refused, or reset before an
// answer: a list or watch is safe to send again); every answer, errors included, goes back to client-go
// as is. Other requests (writes, reviews, leases, events) fail fast as
// before. A request stops waiting when its context ends.
func WaitForAPIServer(opts ReconnectOptions) func(http.RoundTripper) http.RoundTripper {
	if opts.MinDelay <= 0 {
		opts.MinDelay = 100 * time.Millisecond
	}
	if opts.MaxDelay < opts.MinDelay {
		opts.MaxDelay = max(time.Second, opts.MinDelay)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	st := &outageState{opts: opts}
	return func(rt http.RoundTripper) http.RoundTripper {
		return &waitingTransport{next: rt, st: st}
	}
}

// outageState is shared by every request of one client config, so that an
// outage is logged once, not once per informer.
type outageState struct {
	opts  ReconnectOptions
	mu    sync.Mutex
	since time.Time // zero while reachable
}

func (s *outageState) down(err error) {
	s.mu.Lock()
	first := s.since.IsZero()
	if first {
		s.since = s.opts.Clock.Now()
	}
	s.mu.Unlock()
	if first {
		s.opts.Logger.Warn("Kubernetes API server unreachable; serving the last config received, watches resume when it is back", "error", err)
	}
}

func (s *outageState) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.since.IsZero()
}

func (s *outageState) up() {
	s.mu.Lock()
	since := s.since
	s.since = time.Time{}
	s.mu.Unlock()
	if !since.IsZero() {
		s.opts.Logger.Info("Kubernetes API server reachable again; resuming watches", "unreachableFor", s.opts.Clock.Since(since).Round(time.Millisecond).String())
	}
}

type waitingTransport struct {
	next http.RoundTripper
	st   *outageState
}

// WrappedRoundTripper lets client-go see through the wrapper.
func (t *waitingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *waitingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isListOrWatch(req) {
		return t.next.RoundTrip(req)
	}
	delay := t.st.opts.MinDelay
	for {
		// After an outage, a list or watch is sent only once the API
		// server is ready: one that is still starting answers 429 while
		// its watch cache fills, or 404 for custom resources, and each such
		// answer costs the reflector a backoff.
		err := t.ready(req)
		if err == nil {
			var resp *http.Response
			if resp, err = t.next.RoundTrip(req); err == nil {
				return resp, nil
			}
			if !isConnectFailure(err) {
				return nil, err
			}
			t.st.down(err)
		}
		// Jitter keeps many informers from arriving at once.
		wait := delay/2 + rand.N(delay/2+1)
		timer := t.st.opts.Clock.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, err
		case <-timer.C():
		}
		delay = min(2*delay, t.st.opts.MaxDelay)
	}
}

// ready returns nil when the API server is known reachable, or, during an
// outage, when its /readyz answers 200 (or refuses this client, which
// then cannot know better); otherwise why it is not ready.
func (t *waitingTransport) ready(req *http.Request) error {
	if !t.st.isDown() {
		return nil
	}
	u := *req.URL
	u.Path, u.RawPath, u.RawQuery = "/readyz", "", ""
	probe, err := http.NewRequestWithContext(req.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	probe.Header = req.Header.Clone()
	resp, err := t.next.RoundTrip(probe)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return fmt.Errorf("API server not ready: /readyz answered %s", resp.Status)
	}
	t.st.up()
	return nil
}

// isListOrWatch reports whether req is an informer's list or watch: a GET
// without a body that asks for a watch or names a resourceVersion.
func isListOrWatch(req *http.Request) bool {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) {
		return false
	}
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || q.Has("resourceVersion")
}

// isConnectFailure reports whether err means no connection could be made,
// or it was reset before an answer (an API server stopping, or a load
// balancer in front of none): a GET without a body is safe to send again.
func isConnectFailure(err error) bool {
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
