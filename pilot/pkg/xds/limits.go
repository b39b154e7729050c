package xds

import (
	"cmp"
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
)

// Limits bound what one ADS client can cost the server, so that a hostile
// or broken client cannot take it down, starve other clients or pin
// memory. A zero field means its default (DefaultLimits); a negative one
// turns that limit off.
type Limits struct {
	// SendTimeout is how long one response may wait to be written to a
	// stream. gRPC blocks a write while the stream's peer has not read
	// what was written before (flow control); a stream stuck past this is
	// closed with DeadlineExceeded and counted (pilot_xds_write_timeout),
	// and Envoy reconnects. Other streams never wait for it.
	SendTimeout time.Duration
	// MaxResourceNamesPerRequest bounds the resource names one request
	// may carry (resource_names, or a delta request's subscribe,
	// unsubscribe and initial versions together).
	MaxResourceNamesPerRequest int
	// MaxSubscribedNames bounds the names one stream may hold subscribed
	// for one type (delta subscriptions grow request by request).
	MaxSubscribedNames int
	// MaxTypesPerStream bounds the distinct type URLs one stream may ask
	// for; each costs per-stream state.
	MaxTypesPerStream int
	// RequestsPerSecond and RequestBurst are a token bucket per stream:
	// a stream sending faster is closed with ResourceExhausted and counted.
	RequestsPerSecond float64
	RequestBurst      int
	// StreamsPerSecond and StreamBurst admit new ADS streams at a bounded
	// rate, server-wide. A stream beyond it waits for its turn (until the
	// client gives up); it is never refused, so gateways reconnecting
	// together after a restart all get in.
	StreamsPerSecond float64
	StreamBurst      int
	// SharedNamesBytes bounds the memory of the decoded request name
	// lists shared between streams (package wire); a longer list than a
	// quarter of it is decoded for its request alone.
	SharedNamesBytes int64
}

// DefaultLimits are the limits used for zero fields. They leave room for
// 50,000 services per gateway and for 500 gateways reconnecting at once.
var DefaultLimits = Limits{
	SendTimeout:                30 * time.Second,
	MaxResourceNamesPerRequest: 100_000,
	MaxSubscribedNames:         100_000,
	MaxTypesPerStream:          16,
	RequestsPerSecond:          100,
	RequestBurst:               200,
	StreamsPerSecond:           200,
	StreamBurst:                500,
	SharedNamesBytes:           wire.DefaultSharedNamesBytes,
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	l.SendTimeout = cmp.Or(l.SendTimeout, d.SendTimeout)
	l.MaxResourceNamesPerRequest = cmp.Or(l.MaxResourceNamesPerRequest, d.MaxResourceNamesPerRequest)
	l.MaxSubscribedNames = cmp.Or(l.MaxSubscribedNames, d.MaxSubscribedNames)
	l.MaxTypesPerStream = cmp.Or(l.MaxTypesPerStream, d.MaxTypesPerStream)
	l.RequestsPerSecond = cmp.Or(l.RequestsPerSecond, d.RequestsPerSecond)
	l.RequestBurst = cmp.Or(l.RequestBurst, d.RequestBurst)
	l.StreamsPerSecond = cmp.Or(l.StreamsPerSecond, d.StreamsPerSecond)
	l.StreamBurst = cmp.Or(l.StreamBurst, d.StreamBurst)
	l.SharedNamesBytes = cmp.Or(l.SharedNamesBytes, d.SharedNamesBytes)
	return l
}

// exceeds reports whether n is over limit (a negative limit is off).
func exceeds(n, limit int) bool { return limit >= 0 && n > limit }

// Limit labels of wayfinder_xds_limit_exceeded_total: a fixed set.
const (
	limitRequestRate    = "request_rate"
	limitRequestNames   = "request_names"
	limitSubscribed     = "subscribed_names"
	limitTypesPerStream = "types_per_stream"
	limitTypeURL        = "type_url_length"
)

// maxTypeURLBytes bounds a requested type URL (Envoy's longest is about
// 80 bytes).
const maxTypeURLBytes = 512

// tokenBucket is a token bucket on an injected clock: rate tokens a
// second, holding at most burst. Not safe for concurrent use.
type tokenBucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

func newTokenBucket(rate float64, burst int, now time.Time) *tokenBucket {
	if rate < 0 {
		return nil // off
	}
	b := float64(max(burst, 1))
	return &tokenBucket{rate: rate, burst: b, tokens: b, last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(b.burst, b.tokens+dt*b.rate)
	}
	b.last = now
}

// allow takes a token if one is there.
func (b *tokenBucket) allow(now time.Time) bool {
	if b == nil {
		return true
	}
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// reserve takes a token, going into debt if needed, and returns how long
// until the token is due.
func (b *tokenBucket) reserve(now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.refill(now)
	b.tokens--
	if b.tokens >= 0 || b.rate == 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// admission queues new streams: each takes a token of a server-wide
// bucket and waits until it is due. Waiting streams hold only their
// goroutine; a client that gives up (its context ends) returns its token.
type admission struct {
	clock clock.Clock
	mu    sync.Mutex
	b     *tokenBucket
}

func newAdmission(c clock.Clock, rate float64, burst int) *admission {
	return &admission{clock: c, b: newTokenBucket(rate, burst, c.Now())}
}

// wait returns once the stream may start, or with the context's error
// when the client or the server gave up first. It returns how long the
// stream waited.
func (a *admission) wait(ctx, server context.Context) (time.Duration, error) {
	if a.b == nil {
		return 0, nil
	}
	a.mu.Lock()
	d := a.b.reserve(a.clock.Now())
	a.mu.Unlock()
	if d <= 0 {
		return 0, nil
	}
	t := a.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return d, nil
	case <-ctx.Done():
		a.refund()
		return 0, status.FromContextError(ctx.Err()).Err()
	case <-server.Done():
		a.refund()
		return 0, status.Error(codes.Unavailable, "server shutting down")
	}
}

func (a *admission) refund() {
	a.mu.Lock()
	a.b.tokens = math.Min(a.b.burst, a.b.tokens+1)
	a.mu.Unlock()
}

// limitMetrics count what the limits did; every label value is from a
// fixed set.
type limitMetrics struct {
	writeTimeouts prometheus.Counter
	exceeded      *prometheus.CounterVec
	admissionWait prometheus.Histogram
	suppressed    prometheus.Counter
}

func newLimitMetrics(reg *prometheus.Registry) *limitMetrics {
	m := &limitMetrics{
		writeTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pilot_xds_write_timeout",
			Help: "ADS streams closed because a response was not taken by the client within the send timeout.",
		}),
		exceeded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_xds_limit_exceeded_total",
			Help: "ADS streams closed for exceeding a limit: limit=request_rate, request_names, subscribed_names, types_per_stream or type_url_length.",
		}, []string{"limit"}),
		admissionWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wayfinder_xds_stream_admission_wait_seconds",
			Help:    "Seconds a new ADS stream waited for admission (streams are queued, never refused).",
			Buckets: latencyBuckets,
		}),
		suppressed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_log_lines_suppressed_total",
			Help: "Log lines about a client left out because the same line was logged for the same peer too often.",
		}),
	}
	for _, l := range []string{limitRequestRate, limitRequestNames, limitSubscribed, limitTypesPerStream, limitTypeURL} {
		m.exceeded.WithLabelValues(l)
	}
	reg.MustRegister(m.writeTimeouts, m.exceeded, m.admissionWait, m.suppressed)
	return m
}

// streamLimits is a stream's own share of the limits (guarded by mu).
type streamLimits struct {
	requests *tokenBucket
	started  bool
}

// sendWithin writes one response with send and waits at most the send
// timeout for it. gRPC-Go's SendMsg returns once the message is queued on
// the connection while the stream has write quota (64 KiB, given back as
// the connection's writer puts bytes on the wire, which the peer's flow
// control window allows only as far as the peer reads), and blocks
// otherwise: a client that stops reading blocks the write after its
// window is full, for ever. So the write runs on its own goroutine; when
// the timeout passes first, this returns an error, the stream's loop ends
// the stream handler with it, and gRPC cancels the stream's context,
// which wakes the blocked write. Nothing shared is held while waiting.
func (s *DiscoveryServer) sendWithin(ctx context.Context, typeURL string, send func() error) error {
	d := s.limits.SendTimeout
	if d < 0 {
		return send()
	}
	done := make(chan error, 1)
	go func() { done <- send() }()
	s.sending.Add(1)
	defer s.sending.Add(-1)
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C():
		s.limitMetrics.writeTimeouts.Inc()
		s.warnPeer(peerOf(ctx), "ADS stream closed: the client did not read a response within the send timeout",
			"type", shortType(typeURL), "timeout", d)
		return status.Errorf(codes.DeadlineExceeded, "%s response not read by the client within %s: stream closed", shortType(typeURL), d)
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-s.ctx.Done():
		return status.Error(codes.Unavailable, "server shutting down")
	}
}

// admit waits until a new stream may start (see Limits.StreamsPerSecond).
func (s *DiscoveryServer) admit(ctx context.Context) error {
	if err := s.refuseIfDraining(); err != nil {
		return err
	}
	waited, err := s.admission.wait(ctx, s.ctx)
	if err == nil {
		s.limitMetrics.admissionWait.Observe(waited.Seconds())
		// Queued behind the admission rate while Drain began.
		err = s.refuseIfDraining()
	}
	return err
}

// limitRequest checks a request against the stream's limits before
// anything else looks at it: the request rate, the number of names it
// carries and the number of types the stream asks for. A request over a
// limit ends the stream with ResourceExhausted.
func (s *DiscoveryServer) limitRequest(key streamKey, typeURL string, names int) error {
	s.mu.Lock()
	st := s.streams[key]
	if st == nil {
		s.mu.Unlock()
		return nil // onRequest reports it
	}
	if !st.limits.started {
		st.limits.started = true
		st.limits.requests = newTokenBucket(s.limits.RequestsPerSecond, s.limits.RequestBurst, s.clock.Now())
	}
	peer := st.peer
	var limit, msg string
	switch {
	case !st.limits.requests.allow(s.clock.Now()):
		limit, msg = limitRequestRate, "more than the allowed requests per second"
	case exceeds(names, s.limits.MaxResourceNamesPerRequest):
		limit, msg = limitRequestNames, "a request names more resources than allowed"
	case len(typeURL) > maxTypeURLBytes:
		limit, msg = limitTypeURL, "a type URL is longer than allowed"
	case st.types[typeURL] == nil && exceeds(len(st.types)+1, s.limits.MaxTypesPerStream):
		limit, msg = limitTypesPerStream, "the stream asks for more type URLs than allowed"
	}
	s.mu.Unlock()
	if limit == "" {
		return nil
	}
	return s.limitExceeded(peer, limit, msg, "type", clip(typeURL), "names", names)
}

// limitExceeded counts and logs a stream closed for a limit and returns
// its error.
func (s *DiscoveryServer) limitExceeded(peer, limit, msg string, args ...any) error {
	s.limitMetrics.exceeded.WithLabelValues(limit).Inc()
	s.warnPeer(peer, "ADS stream closed: "+msg, append([]any{"limit", limit}, args...)...)
	return status.Errorf(codes.ResourceExhausted, "%s (limit %s): stream closed", msg, limit)
}
