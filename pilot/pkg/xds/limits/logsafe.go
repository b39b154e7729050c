package limits

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/peer"
	"k8s.io/utils/clock"
)

// MaxLoggedBytes bounds a client-supplied string (node id, NACK message,
// type URL) in a log line; clients choose them and can make them megabytes.
const MaxLoggedBytes = 256

// MaxKeptNackBytes bounds a NACK message the server keeps (for
// /debug/syncz).
const MaxKeptNackBytes = 4096

// Clip returns s, or its first MaxLoggedBytes bytes and how long it was.
func Clip(s string) string { return ClipTo(s, MaxLoggedBytes) }

// ClipTo returns s, or its first n bytes (cut at a rune boundary) and how
// long it was.
func ClipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut at a rune boundary so the log line stays valid UTF-8.
	cut := n
	for cut > 0 && cut > n-4 && !runeStart(s[cut]) {
		cut--
	}
	return s[:cut] + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// ClipAll clips every value of a client-supplied map (labels).
func ClipAll(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	n := 0
	for k, v := range m {
		if n == 32 {
			out["..."] = strconv.Itoa(len(m)) + " labels"
			break
		}
		out[Clip(k)] = Clip(v)
		n++
	}
	return out
}

// PeerOf is the address of the client of a stream's context.
func PeerOf(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// Per-peer log rate limits: at most PeerLogBurst lines of one message for
// one client host, then one every peerLogEvery; the next line logged says
// how many were left out. At most peerLogKeys (host, message) pairs are
// tracked; beyond that, lines share one overflow allowance.
const (
	PeerLogBurst = 10
	peerLogEvery = 6 * time.Second
	peerLogKeys  = 4096
)

// peerLog rate-limits repeated log lines per client host.
type peerLog struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[peerLogKey]*peerLogEntry
	// swept is when the map was last swept: at most once a peerLogEvery,
	// so keys sprayed by a client cost no more than the overflow key.
	swept time.Time
}

type peerLogKey struct{ host, msg string }

type peerLogEntry struct {
	b          tokenBucket
	suppressed int
}

func newPeerLog(c clock.PassiveClock) *peerLog {
	return &peerLog{clock: c, m: map[peerLogKey]*peerLogEntry{}}
}

// allow reports whether a line may be logged now, and how many lines of
// the same key were left out since the last one logged.
func (p *peerLog) allow(addr, msg string) (suppressed int, ok bool) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	k := peerLogKey{host: host, msg: msg}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[k]
	if e == nil {
		if len(p.m) >= peerLogKeys && now.Sub(p.swept) >= peerLogEvery {
			p.sweepLocked(now)
		}
		if len(p.m) >= peerLogKeys {
			k = peerLogKey{host: "(overflow)"}
			e = p.m[k]
		}
	}
	if e == nil {
		e = &peerLogEntry{b: *newTokenBucket(1/peerLogEvery.Seconds(), PeerLogBurst, now)}
		p.m[k] = e
	}
	if !e.b.allow(now) {
		e.suppressed++
		return 0, false
	}
	n := e.suppressed
	e.suppressed = 0
	return n, true
}

// sweepLocked forgets keys whose allowance is full again: they have
// been quiet long enough that forgetting them changes nothing.
func (p *peerLog) sweepLocked(now time.Time) {
	p.swept = now
	for k, e := range p.m {
		e.b.refill(now)
		if e.b.tokens >= e.b.burst && e.suppressed == 0 {
			delete(p.m, k)
		}
	}
}

// WarnPeer logs a warning about a client, rate-limited per client host
// and message. Client-supplied values in args must be clipped by the
// caller.
func (l *Limiter) WarnPeer(addr, msg string, args ...any) {
	l.logPeer(slog.LevelWarn, addr, msg, args)
}

// InfoPeer is WarnPeer at info level.
func (l *Limiter) InfoPeer(addr, msg string, args ...any) {
	l.logPeer(slog.LevelInfo, addr, msg, args)
}

func (l *Limiter) logPeer(level slog.Level, addr, msg string, args []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	n, ok := l.peerLog.allow(addr, msg)
	if !ok {
		l.metrics.suppressed.Inc()
		return
	}
	args = append([]any{"peer", addr}, args...)
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.log.Log(context.Background(), level, msg, args...)
}
