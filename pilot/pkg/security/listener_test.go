package security

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// dialFrom connects to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c (EOF or reset) rather
// than keeping it open.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// Connections past the per-address bound, then past the total, are
// closed on accept (counted), never queued; a closed connection frees its
// place.
func TestLimitListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l := LimitListener(raw, ListenerLimits{Max: 3, PerPeer: 2}, reg)
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := raw.Addr().String()
	a1 := dialFrom(t, "127.0.0.1", addr)
	s1 := <-accepted
	dialFrom(t, "127.0.0.1", addr)
	<-accepted
	if a3 := dialFrom(t, "127.0.0.1", addr); !closedByServer(a3) {
		t.Error("a third connection from one address was kept (per-peer bound 2)")
	}
	b1 := dialFrom(t, "127.0.0.2", addr)
	<-accepted
	if b2 := dialFrom(t, "127.0.0.3", addr); !closedByServer(b2) {
		t.Error("a fourth connection was kept (total bound 3)")
	}
	if closedByServer(b1) {
		t.Error("an admitted connection was closed")
	}
	// The server closing one frees its place for the same address.
	s1.Close()
	if !closedByServer(a1) {
		t.Fatal("the server's close did not reach the client")
	}
	dialFrom(t, "127.0.0.1", addr)
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Error("a connection after one was closed was not accepted")
	}
	const refused = "wayfinder_http_connections_refused_total"
	if got := sample(t, reg, refused, map[string]string{"limit": ConnLimitPeer}); got != 1 {
		t.Errorf("refused{peer} = %v, want 1", got)
	}
	if got := sample(t, reg, refused, map[string]string{"limit": ConnLimitTotal}); got != 1 {
		t.Errorf("refused{total} = %v, want 1", got)
	}
}

// sample is the value of the counter or gauge name with the given labels
// in reg; -1 when absent.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// series counts the samples of name in reg.
func series(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}
