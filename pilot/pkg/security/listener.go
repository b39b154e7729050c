package security

import (
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a connection is closed on accept: the only values of the limit
// label of wayfinder_http_connections_refused_total.
const (
	ConnLimitTotal = "total"
	ConnLimitPeer  = "peer"
)

// ListenerLimits cap the connections a listener keeps open.
type ListenerLimits struct {
	// Max bounds the open connections; PerPeer those of one IP address.
	// Zero or negative: no bound.
	Max, PerPeer int
}

// LimitListener wraps l so that it keeps at most lim.Max connections open,
// at most lim.PerPeer from one IP address. A connection over a bound is
// closed as soon as it is accepted, never queued: Accept keeps taking
// connections, so a client holding its share cannot keep the kubelet's
// readiness probe or Prometheus waiting in the backlog behind it, as
// netutil.LimitListener would. The refusals are counted on reg (when not
// nil) in wayfinder_http_connections_refused_total{limit}.
func LimitListener(l net.Listener, lim ListenerLimits, reg prometheus.Registerer) net.Listener {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wayfinder_http_connections_refused_total",
		Help: "Connections to the debug and metrics server closed on accept, by limit: total (--http-max-connections) or peer (--http-max-connections-per-peer).",
	}, []string{"limit"})
	for _, r := range []string{ConnLimitTotal, ConnLimitPeer} {
		refused.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(refused)
	}
	return &limitListener{Listener: l, lim: lim, perPeer: map[string]int{},
		refusedTotal: refused.WithLabelValues(ConnLimitTotal), refusedPeer: refused.WithLabelValues(ConnLimitPeer)}
}

type limitListener struct {
	net.Listener
	lim                       ListenerLimits
	refusedTotal, refusedPeer prometheus.Counter

	mu      sync.Mutex
	open    int
	perPeer map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := peerHost(c.RemoteAddr().String())
		if limit := l.take(host); limit != "" {
			c.Close()
			if limit == ConnLimitTotal {
				l.refusedTotal.Inc()
			} else {
				l.refusedPeer.Inc()
			}
			continue
		}
		return &limitConn{Conn: c, l: l, host: host}, nil
	}
}

// take counts a connection from host, or names the bound it would cross.
func (l *limitListener) take(host string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lim.Max > 0 && l.open >= l.lim.Max {
		return ConnLimitTotal
	}
	if l.lim.PerPeer > 0 && l.perPeer[host] >= l.lim.PerPeer {
		return ConnLimitPeer
	}
	l.open++
	l.perPeer[host]++
	return ""
}

func (l *limitListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perPeer[host]--; l.perPeer[host] <= 0 {
		delete(l.perPeer, host)
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	host string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host) })
	return err
}
