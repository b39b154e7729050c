package limits

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPeerLogIsBoundedPerPeerAndInMemory(t *testing.T) {
	clk := &fakePassive{now: t0}
	p := newPeerLog(clk)
	logged := 0
	for range 100 {
		if _, ok := p.allow("10.0.0.1:1234", "m"); ok {
			logged++
		}
	}
	if logged != PeerLogBurst {
		t.Errorf("%d of 100 repeated lines logged, want %d", logged, PeerLogBurst)
	}
	// Another port of the same host is the same peer; another host is not.
	if _, ok := p.allow("10.0.0.1:999", "m"); ok {
		t.Error("same host, new port: not limited")
	}
	if _, ok := p.allow("10.0.0.2:1", "m"); !ok {
		t.Error("another host was limited")
	}
	clk.now = clk.now.Add(peerLogEvery)
	if n, ok := p.allow("10.0.0.1:1", "m"); !ok || n != 100-PeerLogBurst+1 {
		t.Errorf("after a while: logged %v, suppressed %d, want %d", ok, n, 100-PeerLogBurst+1)
	}
	for i := range 3 * peerLogKeys {
		p.allow(fmt.Sprintf("10.1.%d.%d:1", i/256, i%256), "m")
	}
	if len(p.m) > peerLogKeys+1 {
		t.Errorf("%d keys tracked, bound %d", len(p.m), peerLogKeys)
	}
}

type fakePassive struct{ now time.Time }

func (f *fakePassive) Now() time.Time                  { return f.now }
func (f *fakePassive) Since(t time.Time) time.Duration { return f.now.Sub(t) }

func TestClip(t *testing.T) {
	if got := Clip("short"); got != "short" {
		t.Errorf("Clip(short) = %q", got)
	}
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := Clip(long)
	if !strings.HasSuffix(got, "...(2000 bytes)") || len(got) > MaxLoggedBytes+20 || !utf8.ValidString(got) {
		t.Errorf("Clip(long) = %q", got)
	}
}
