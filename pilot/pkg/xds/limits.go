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
	// client gives up, or MaxQueuedStreams are waiting already), so
	// gateways reconnecting together after a restart all get in.
	StreamsPerSecond float64
	StreamBurst      int
	// SharedNamesBytes bounds the memory of the decoded request name
	// lists shared between streams (package wire); a longer list than a
	// quarter of it is decoded for its request alone.
	SharedNamesBytes int64
	// MaxResourceNameBytes bounds one resource name a request carries, and
	// every version and nonce in it: the server's own are far shorter. A
	// type whose served resources have longer names allows the longest.
	MaxResourceNameBytes int
	// MaxSubscribedBytes bounds, per stream and type, what a subscription
	// holds and each name list of one request, in bytes: a name counts its
	// length plus nameOverheadBytes (what holding it costs), an initial
	// resource version its name's and its own. It grows with what the
	// server serves of the type (see served in limits_served.go).
	MaxSubscribedBytes int
	// MaxStreamsPerIdentity bounds the open (and queued) ADS streams of
	// one verified ServiceAccount, however verified (token or
	// certificate); MaxStreamsPerPeer those of one client IP address,
	// authenticated or not. A new stream beyond either is refused with
	// ResourceExhausted.
	MaxStreamsPerIdentity int
	MaxStreamsPerPeer     int
	// MaxQueuedStreams bounds the new streams waiting for admission
	// (StreamsPerSecond); one more is refused with ResourceExhausted
	// rather than queued.
	MaxQueuedStreams int
}

// DefaultLimits are the limits used for zero fields. The count and byte
// limits on names are floors: each grows with what the server serves of
// the type (twice the largest set of it any proxy is sent, see
// limits_served.go), so no gateway is cut off however large the config,
// and the floors cover what a client names beyond that (bootstrap
// resources, names of a push being replaced). Admission leaves room for
// 500 gateways reconnecting at once and 2,000 more waiting up to 10 s.
//
// Streams per identity and per peer: every replica of a gateway
// Deployment (and every pod of a proxyless gRPC Deployment) shares one
// ServiceAccount, each holds one ADS stream, and while a connection that
// died silently is found out (keepalive, up to 40 s) its replacement is a
// second one: 1,000 leaves room for 500 replicas reconnecting together.
// Pods have addresses of their own, but clients behind NAT or an
// east-west gateway, and the load tools on one host, share one.
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
	MaxResourceNameBytes:       1 << 10,
	MaxSubscribedBytes:         256 << 10,
	MaxStreamsPerIdentity:      1000,
	MaxStreamsPerPeer:          1000,
	MaxQueuedStreams:           2000,
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
	l.MaxResourceNameBytes = cmp.Or(l.MaxResourceNameBytes, d.MaxResourceNameBytes)
	l.MaxSubscribedBytes = cmp.Or(l.MaxSubscribedBytes, d.MaxSubscribedBytes)
	l.MaxStreamsPerIdentity = cmp.Or(l.MaxStreamsPerIdentity, d.MaxStreamsPerIdentity)
	l.MaxStreamsPerPeer = cmp.Or(l.MaxStreamsPerPeer, d.MaxStreamsPerPeer)
	l.MaxQueuedStreams = cmp.Or(l.MaxQueuedStreams, d.MaxQueuedStreams)
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
	limitNameLength     = "name_length"
	limitRequestBytes   = "request_bytes"
	limitSubscribedSize = "subscribed_bytes"
	limitNodeSize       = "node_size"
	limitPerIdentity    = "streams_per_identity"
	limitPerPeer        = "streams_per_peer"
	limitQueue          = "admission_queue"
)

var limitLabels = []string{limitRequestRate, limitRequestNames, limitSubscribed, limitTypesPerStream, limitTypeURL,
	limitNameLength, limitRequestBytes, limitSubscribedSize, limitNodeSize, limitPerIdentity, limitPerPeer, limitQueue}

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
// At most max streams wait: the bucket's debt is bounded by them, and a
// stream beyond is refused rather than queued behind a debt that could
// grow for as long as clients keep coming.
type admission struct {
	clock   clock.Clock
	max     int // negative: no bound
	mu      sync.Mutex
	b       *tokenBucket
	waiting int
}

func newAdmission(c clock.Clock, rate float64, burst, maxQueued int) *admission {
	return &admission{clock: c, b: newTokenBucket(rate, burst, c.Now()), max: maxQueued}
}

// errQueueFull refuses a stream when max streams are waiting already.
var errQueueFull = status.Error(codes.ResourceExhausted, "too many ADS streams waiting for admission; retry later (limit admission_queue)")

// wait returns once the stream may start, or with the context's error
// when the client or the server gave up first, or errQueueFull. It
// returns how long the stream waited.
func (a *admission) wait(ctx, server context.Context) (time.Duration, error) {
	if a.b == nil {
		return 0, nil
	}
	a.mu.Lock()
	now := a.clock.Now()
	a.b.refill(now)
	if a.b.tokens < 1 && exceeds(a.waiting+1, a.max) {
		a.mu.Unlock()
		return 0, errQueueFull
	}
	d := a.b.reserve(now)
	if d > 0 {
		a.waiting++
	}
	a.mu.Unlock()
	if d <= 0 {
		return 0, nil
	}
	defer func() {
		a.mu.Lock()
		a.waiting--
		a.mu.Unlock()
	}()
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
			Help: "ADS streams closed or refused for exceeding a limit: limit=request_rate, request_names, subscribed_names, types_per_stream, type_url_length, name_length, request_bytes, subscribed_bytes, node_size, streams_per_identity, streams_per_peer or admission_queue.",
		}, []string{"limit"}),
		admissionWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wayfinder_xds_stream_admission_wait_seconds",
			Help:    "Seconds a new ADS stream waited for admission (queued up to a bound, refused beyond it).",
			Buckets: latencyBuckets,
		}),
		suppressed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_log_lines_suppressed_total",
			Help: "Log lines about a client left out because the same line was logged for the same peer too often.",
		}),
	}
	for _, l := range limitLabels {
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

// admit decides whether a new stream may start: refused while draining,
// or when its identity or peer address holds as many streams as allowed,
// or when the admission queue is full; otherwise it waits its turn (see
// Limits.StreamsPerSecond). The stream counts against its identity and
// peer from here on, waiting included, until it calls release.
func (s *DiscoveryServer) admit(ctx context.Context) (release func(), err error) {
	if err := s.refuseIfDraining(); err != nil {
		return nil, err
	}
	release, err = s.streamCaps.acquire(ctx)
	if err != nil {
		return nil, err
	}
	waited, err := s.admission.wait(ctx, s.ctx)
	if err == errQueueFull {
		s.limitMetrics.exceeded.WithLabelValues(limitQueue).Inc()
		s.warnPeer(peerOf(ctx), "ADS stream refused: the admission queue is full", "limit", limitQueue, "queued", s.limits.MaxQueuedStreams)
	}
	if err == nil {
		s.limitMetrics.admissionWait.Observe(waited.Seconds())
		// Queued behind the admission rate while Drain began.
		err = s.refuseIfDraining()
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// limitExceeded counts and logs a stream closed for a limit and returns
// its error.
func (s *DiscoveryServer) limitExceeded(peer, limit, msg string, args ...any) error {
	s.limitMetrics.exceeded.WithLabelValues(limit).Inc()
	s.warnPeer(peer, "ADS stream closed: "+msg, append([]any{"limit", limit}, args...)...)
	return status.Errorf(codes.ResourceExhausted, "%s (limit %s): stream closed", msg, limit)
}
