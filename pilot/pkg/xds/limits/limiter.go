package limits

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// Config is what a Limiter needs besides its Options.
type Config struct {
	// Clock times writes, request rates, admission and log rate limits.
	// Required.
	Clock clock.WithTicker
	// Registry receives the limits' metrics. Required.
	Registry prometheus.Registerer
	// Logger receives the lines about clients (rate-limited per client
	// host). Required.
	Logger *slog.Logger
}

// Limiter enforces Options for one discovery server: the server-wide
// admission queue, the streams per identity and address, and the
// per-request and per-write bounds. Safe for concurrent use.
type Limiter struct {
	opts      Options
	clock     clock.WithTicker
	log       *slog.Logger
	metrics   *metrics
	admission *admission
	caps      *streamCaps
	peerLog   *peerLog
	// sending counts writes waiting in SendWithin.
	sending atomic.Int64
}

// New returns a Limiter enforcing opts, its zero fields taken from
// Defaults.
func New(opts Options, cfg Config) *Limiter {
	opts = opts.WithDefaults()
	l := &Limiter{opts: opts, clock: cfg.Clock, log: cfg.Logger}
	l.metrics = newMetrics(cfg.Registry)
	l.admission = newAdmission(cfg.Clock, opts.StreamsPerSecond, opts.StreamBurst, opts.MaxQueuedStreams)
	l.caps = newStreamCaps(l, opts)
	l.peerLog = newPeerLog(cfg.Clock)
	return l
}

// Options returns the limits enforced, defaults filled in.
func (l *Limiter) Options() Options { return l.opts }

// Sending returns how many writes are waiting in SendWithin now.
func (l *Limiter) Sending() int64 { return l.sending.Load() }

// latencyBuckets are the server's latency buckets (Istio's), in seconds.
var latencyBuckets = []float64{.01, .1, 1, 3, 5, 10, 20, 30}

// metrics count what the limits did; every label value is from a fixed
// set.
type metrics struct {
	writeTimeouts prometheus.Counter
	exceeded      *prometheus.CounterVec
	admissionWait prometheus.Histogram
	suppressed    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
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
	for _, l := range Labels {
		m.exceeded.WithLabelValues(l)
	}
	reg.MustRegister(m.writeTimeouts, m.exceeded, m.admissionWait, m.suppressed)
	return m
}

// SendWithin writes one response with send and waits at most the send
// timeout for it; typeName names the response's type in the log line and
// error. gRPC-Go's SendMsg returns once the message is queued on the
// connection while the stream has write quota (64 KiB, given back as the
// connection's writer puts bytes on the wire, which the peer's flow
// control window allows only as far as the peer reads), and blocks
// otherwise: a client that stops reading blocks the write after its
// window is full, for ever. So the write runs on its own goroutine; when
// the timeout passes first, this returns an error, the stream's loop ends
// the stream handler with it, and gRPC cancels the stream's context,
// which wakes the blocked write. Nothing shared is held while waiting.
// server is the server's context: its end ends the wait too.
func (l *Limiter) SendWithin(ctx, server context.Context, typeName string, send func() error) error {
	d := l.opts.SendTimeout
	if d < 0 {
		return send()
	}
	done := make(chan error, 1)
	go func() { done <- send() }()
	l.sending.Add(1)
	defer l.sending.Add(-1)
	t := l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C():
		l.metrics.writeTimeouts.Inc()
		l.WarnPeer(PeerOf(ctx), "ADS stream closed: the client did not read a response within the send timeout",
			"type", typeName, "timeout", d)
		return status.Errorf(codes.DeadlineExceeded, "%s response not read by the client within %s: stream closed", typeName, d)
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-server.Done():
		return status.Error(codes.Unavailable, "server shutting down")
	}
}

// Admit decides whether a new stream may start: refused when its
// identity or peer address holds as many streams as allowed, or when the
// admission queue is full; otherwise it waits its turn (see
// Options.StreamsPerSecond). The stream counts against its identity and
// peer from here on, waiting included, until it calls release. server is
// the server's context: its end refuses the stream.
func (l *Limiter) Admit(ctx, server context.Context) (release func(), err error) {
	release, err = l.caps.acquire(ctx)
	if err != nil {
		return nil, err
	}
	waited, err := l.admission.wait(ctx, server)
	if err == errQueueFull {
		l.metrics.exceeded.WithLabelValues(LimitQueue).Inc()
		l.WarnPeer(PeerOf(ctx), "ADS stream refused: the admission queue is full", "limit", LimitQueue, "queued", l.opts.MaxQueuedStreams)
	}
	if err != nil {
		release()
		return nil, err
	}
	l.metrics.admissionWait.Observe(waited.Seconds())
	return release, nil
}

// Exceeded counts and logs a stream closed for a limit and returns its
// error.
func (l *Limiter) Exceeded(peer, limit, msg string, args ...any) error {
	l.metrics.exceeded.WithLabelValues(limit).Inc()
	l.WarnPeer(peer, "ADS stream closed: "+msg, append([]any{"limit", limit}, args...)...)
	return status.Errorf(codes.ResourceExhausted, "%s (limit %s): stream closed", msg, limit)
}

// StreamCounts returns the streams counted for an identity and an address
// (for tests and debugging).
func (l *Limiter) StreamCounts(namespace, serviceAccount, host string) (identity, peer int) {
	return l.caps.counts(namespace, serviceAccount, host)
}

// AdmissionQueue returns the new streams waiting for admission and the
// tokens the admission bucket owes (for tests and debugging).
func (l *Limiter) AdmissionQueue() (waiting int, debt float64) { return l.admission.queue() }
