package security

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Reasons an authentication fails: the only values of the reason label of
// wayfinder_xds_auth_failures_total.
const (
	ReasonNoCredential       = "no_credential"
	ReasonInvalidToken       = "invalid_token"
	ReasonTokenReviewError   = "token_review_error"
	ReasonInvalidCertificate = "invalid_certificate"
	ReasonNamespaceMismatch  = "namespace_mismatch"
	ReasonIdentityConflict   = "identity_conflict"
)

var reasons = []string{ReasonNoCredential, ReasonInvalidToken, ReasonTokenReviewError, ReasonInvalidCertificate,
	ReasonNamespaceMismatch, ReasonIdentityConflict}

// Failures counts and logs refused clients. Each peer (by IP address) and
// reason is logged once per LogInterval; the record of who was logged is
// bounded, so a flood of peers costs bounded memory (the oldest records
// are forgotten and those peers may be logged again). A nil *Failures
// does nothing.
type Failures struct {
	log     *slog.Logger
	clock   clock.PassiveClock
	counter *prometheus.CounterVec

	mu     sync.Mutex
	logged map[string]time.Time
}

// Bounds of the log dedup.
const (
	maxLoggedPeers = 4096
	logInterval    = time.Hour
)

// NewFailures registers wayfinder_xds_auth_failures_total on reg (when not
// nil) with every reason at zero.
func NewFailures(reg prometheus.Registerer, log *slog.Logger, clk clock.PassiveClock) *Failures {
	if log == nil {
		log = slog.Default()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	f := &Failures{log: log, clock: clk, logged: map[string]time.Time{},
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wayfinder_xds_auth_failures_total",
			Help: "ADS streams refused on the secure port, by reason: " + joinReasons() + ".",
		}, []string{"reason"})}
	for _, r := range reasons {
		f.counter.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(f.counter)
	}
	return f
}

func joinReasons() string {
	out := ""
	for i, r := range reasons {
		if i > 0 {
			out += ", "
		}
		out += r
	}
	return out
}

// Record counts a refusal of peer (host:port or host) for reason and logs
// it unless this peer was logged for this reason within the interval.
// Unknown reasons are counted as invalid_token, keeping the label set fixed.
func (f *Failures) Record(peer, reason, msg string, attrs ...any) {
	if f == nil {
		return
	}
	known := false
	for _, r := range reasons {
		known = known || r == reason
	}
	if !known {
		reason = ReasonInvalidToken
	}
	f.counter.WithLabelValues(reason).Inc()
	host := peer
	if h, _, err := net.SplitHostPort(peer); err == nil {
		host = h
	}
	if !f.first(host + " " + reason) {
		return
	}
	f.log.Warn("ADS client refused: "+msg, append([]any{"peer", peer, "reason", reason}, attrs...)...)
}

func (f *Failures) first(key string) bool {
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if at, ok := f.logged[key]; ok && now.Sub(at) < logInterval {
		return false
	}
	if len(f.logged) >= maxLoggedPeers {
		for k, at := range f.logged {
			if now.Sub(at) >= logInterval {
				delete(f.logged, k)
			}
		}
		if len(f.logged) >= maxLoggedPeers {
			clear(f.logged)
		}
	}
	f.logged[key] = now
	return true
}
