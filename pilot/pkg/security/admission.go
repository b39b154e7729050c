package security

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Limits an Admission refuses a review for: the only values of the limit
// label of wayfinder_auth_admission_refused_total.
const (
	LimitPeerRate   = "peer_rate"
	LimitServerRate = "server_rate"
	LimitInFlight   = "in_flight"
)

var admissionLimits = []string{LimitPeerRate, LimitServerRate, LimitInFlight}

// Ports an Admission guards: the only values of the port label.
const (
	PortXDS   = "xds"
	PortDebug = "debug"
)

// AdmissionOptions bound the TokenReviews that clients of one port can make
// the server start. Only a credential the server has no answer for yet
// costs a review (a token seen before is answered from the cache, a
// client certificate is checked by TLS), so these bound what a stream of
// new, typically junk, tokens can cost. Zero fields take the port's
// defaults; a negative rate or count turns that limit off.
type AdmissionOptions struct {
	// Rate and Burst: reviews started per second for the whole port, and
	// at once.
	Rate  float64
	Burst int
	// PeerRate and PeerBurst: the same per client IP address, so one
	// client cannot spend the port's budget alone.
	PeerRate  float64
	PeerBurst int
	// MaxInFlight bounds the reviews of this port waiting for the API
	// server at one time.
	MaxInFlight int
	// MaxPeers bounds the per-address table; when it is full, addresses
	// idle long enough to have a full bucket again are forgotten first,
	// then the one seen least recently.
	MaxPeers int
}

// DefaultXDSAdmission are the secure ADS port's defaults. A restart of
// every replica makes every gateway reconnect within a second or two,
// each with a token the new process has not reviewed yet: a burst of 400
// admits that many at once, 100 a second more after it, and a refused
// gateway retries (Envoy backs off 0.5 s to a few seconds), so a fleet of
// 1,000 is through within seconds. A gateway pod opens one ADS stream, so
// 20 at once and 5 a second per address leave room for a node's worth of
// gateways behind one address while a single flooding client gets 5 junk
// reviews a second. 200 in flight is the review client's burst: an
// admitted review never waits long for the client's rate limiter.
var DefaultXDSAdmission = AdmissionOptions{Rate: 100, Burst: 400, PeerRate: 5, PeerBurst: 20, MaxInFlight: 200, MaxPeers: 4096}

// DefaultDebugAdmission are the debug port's: people and scripts with
// `kubectl create token`, not fleets.
var DefaultDebugAdmission = AdmissionOptions{Rate: 10, Burst: 20, PeerRate: 2, PeerBurst: 10, MaxInFlight: 10, MaxPeers: 1024}

// OverloadError refuses a review before it starts: the client may try
// again later (RetryAfter); nothing was said about its credential.
type OverloadError struct {
	// Limit is LimitPeerRate, LimitServerRate or LimitInFlight.
	Limit      string
	RetryAfter time.Duration
}

func (e *OverloadError) Error() string {
	switch e.Limit {
	case LimitPeerRate:
		return "too many new credentials from this address to review; retry later"
	case LimitInFlight:
		return "too many credentials being reviewed; retry later"
	}
	return "too many new credentials to review; retry later"
}

// Gate admits one TokenReview: it returns a release to call once the
// review is over, or an *OverloadError.
type Gate func() (release func(), err error)

// AdmissionMetrics are the metrics every Admission of a server shares.
type AdmissionMetrics struct {
	refused  *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
}

// NewAdmissionMetrics registers wayfinder_auth_admission_refused_total and
// wayfinder_auth_reviews_in_flight on reg (when not nil), every label
// value at zero.
func NewAdmissionMetrics(reg prometheus.Registerer) *AdmissionMetrics {
	m := &AdmissionMetrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_auth_admission_refused_total",
			Help: "Credentials refused before any TokenReview because a limit was reached, by port (xds, debug) and limit (peer_rate, server_rate, in_flight).",
		}, []string{"port", "limit"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wayfinder_auth_reviews_in_flight",
			Help: "TokenReviews started for clients of a port (xds, debug) and not yet answered.",
		}, []string{"port"}),
	}
	for _, p := range []string{PortXDS, PortDebug} {
		m.inFlight.WithLabelValues(p)
		for _, l := range admissionLimits {
			m.refused.WithLabelValues(p, l)
		}
	}
	if reg != nil {
		reg.MustRegister(m.refused, m.inFlight)
	}
	return m
}

// Admission decides, before a TokenReview is started, whether the server
// can afford it. It never waits: over a limit the client is refused at
// once, so a flood holds no goroutine, header or API call here.
type Admission struct {
	port     string
	o        AdmissionOptions
	clock    clock.PassiveClock
	log      *slog.Logger
	server   *rate.Limiter // nil: no server limit
	refused  map[string]prometheus.Counter
	inFlight prometheus.Gauge
	active   atomic.Int64

	mu    sync.Mutex
	peers map[string]*peerBucket
	// Refusals are logged at most once per refusalLogEvery, with how many
	// there were since the last line.
	lastLog  time.Time
	unlogged int
}

type peerBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

const refusalLogEvery = 10 * time.Second

// NewAdmission returns the admission of port (PortXDS or PortDebug) with
// o, zero fields taken from that port's defaults. m may be nil (no
// metrics), clk nil (the real clock).
func NewAdmission(port string, o AdmissionOptions, m *AdmissionMetrics, log *slog.Logger, clk clock.PassiveClock) *Admission {
	d := DefaultXDSAdmission
	if port == PortDebug {
		d = DefaultDebugAdmission
	}
	if o.Rate == 0 {
		o.Rate = d.Rate
	}
	if o.Burst == 0 {
		o.Burst = d.Burst
	}
	if o.PeerRate == 0 {
		o.PeerRate = d.PeerRate
	}
	if o.PeerBurst == 0 {
		o.PeerBurst = d.PeerBurst
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = d.MaxInFlight
	}
	if o.MaxPeers <= 0 {
		o.MaxPeers = d.MaxPeers
	}
	if m == nil {
		m = NewAdmissionMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	a := &Admission{port: port, o: o, clock: clk, log: log, peers: map[string]*peerBucket{},
		refused: map[string]prometheus.Counter{}, inFlight: m.inFlight.WithLabelValues(port)}
	for _, l := range admissionLimits {
		a.refused[l] = m.refused.WithLabelValues(port, l)
	}
	if o.Rate > 0 {
		a.server = rate.NewLimiter(rate.Limit(o.Rate), max(o.Burst, 1))
	}
	return a
}

// Gate is the admission of one review for the client at peer (host:port
// or host); nil when a is nil (nothing limited).
func (a *Admission) Gate(peer string) Gate {
	if a == nil {
		return nil
	}
	return func() (func(), error) { return a.admit(peer) }
}

func (a *Admission) admit(peer string) (func(), error) {
	if a.o.MaxInFlight > 0 && a.active.Load() >= int64(a.o.MaxInFlight) {
		return nil, a.refuse(LimitInFlight, peer, time.Second)
	}
	now := a.clock.Now()
	if a.o.PeerRate > 0 && !a.peerAllow(peerHost(peer), now) {
		return nil, a.refuse(LimitPeerRate, peer, time.Duration(float64(time.Second)/a.o.PeerRate))
	}
	if a.server != nil && !a.server.AllowN(now, 1) {
		return nil, a.refuse(LimitServerRate, peer, time.Second)
	}
	if n := a.active.Add(1); a.o.MaxInFlight > 0 && n > int64(a.o.MaxInFlight) {
		a.active.Add(-1)
		return nil, a.refuse(LimitInFlight, peer, time.Second)
	}
	a.inFlight.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			a.active.Add(-1)
			a.inFlight.Dec()
		})
	}, nil
}

// peerAllow takes a token from host's bucket, making one (full) for a
// host not seen yet, within the table's bound.
func (a *Admission) peerAllow(host string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.peers[host]
	if !ok {
		if len(a.peers) >= a.o.MaxPeers {
			a.forgetPeersLocked(now)
		}
		b = &peerBucket{lim: rate.NewLimiter(rate.Limit(a.o.PeerRate), max(a.o.PeerBurst, 1))}
		a.peers[host] = b
	}
	b.seen = now
	return b.lim.AllowN(now, 1)
}

// forgetPeersLocked makes room in the full table: a bucket idle long
// enough to have refilled is as good as a new one, so forgetting it
// changes nothing; when none is, the least recently seen goes.
func (a *Admission) forgetPeersLocked(now time.Time) {
	refill := time.Duration(float64(max(a.o.PeerBurst, 1)) / a.o.PeerRate * float64(time.Second))
	var oldest string
	var at time.Time
	for h, b := range a.peers {
		if now.Sub(b.seen) >= refill {
			delete(a.peers, h)
			continue
		}
		if oldest == "" || b.seen.Before(at) {
			oldest, at = h, b.seen
		}
	}
	if len(a.peers) >= a.o.MaxPeers && oldest != "" {
		delete(a.peers, oldest)
	}
}

func (a *Admission) refuse(limit, peer string, retry time.Duration) error {
	a.refused[limit].Inc()
	now := a.clock.Now()
	a.mu.Lock()
	a.unlogged++
	n := a.unlogged
	logNow := a.lastLog.IsZero() || now.Sub(a.lastLog) >= refusalLogEvery
	if logNow {
		a.lastLog, a.unlogged = now, 0
	}
	a.mu.Unlock()
	if logNow {
		a.log.Warn("credential refused before review: "+limit+" limit reached (see wayfinder_auth_admission_refused_total)",
			"port", a.port, "limit", limit, "peer", peer, "refusedSinceLastLine", n)
	}
	return &OverloadError{Limit: limit, RetryAfter: max(retry, time.Second)}
}

// InFlight is how many reviews a has admitted and not yet released.
func (a *Admission) InFlight() int { return int(a.active.Load()) }

// peerHost is the IP address of a host:port (or the string as given).
func peerHost(peer string) string {
	if h, _, err := net.SplitHostPort(peer); err == nil {
		return h
	}
	return peer
}

// String describes a's limits for logs.
func (a *Admission) String() string {
	return fmt.Sprintf("%s: %g/s (burst %d), %g/s per address (burst %d), %d in flight",
		a.port, a.o.Rate, a.o.Burst, a.o.PeerRate, a.o.PeerBurst, a.o.MaxInFlight)
}
