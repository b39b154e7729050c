package xds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Drain on the server's (fake) clock: 50 streams over 10s. The first is
// closed at once, and each step of d/n closes exactly one more, so no
// window of the drain sees a wave; readiness fails and a new stream is
// refused with Unavailable from the start; every client sees Unavailable,
// the status Envoy retries; and the drain ends at (n-1)*d/n.
func TestDrainClosesStreamsSpreadOverTheDrainDuration(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	const (
		n = 50
		d = 10 * time.Second
	)
	clients := make([]*adsClient, n)
	for i := range clients {
		clients[i] = h.connect(nodeID(fmt.Sprintf("gw-%02d", i)), ingressLabels)
		clients[i].subscribe(resource.ClusterType)
		clients[i].next(resource.ClusterType)
	}
	if code, _ := h.get("/healthz/ready"); code != 200 {
		t.Fatalf("/healthz/ready = %d before draining", code)
	}

	drained := make(chan DrainResult, 1)
	go func() { drained <- h.s.Drain(context.Background(), d) }()

	// closedNow waits until Drain has closed at least want streams and is
	// blocked on its next turn (or done), then reads how many it has
	// closed: Drain closes a stream before it waits again, so the count
	// cannot grow until the next step. The clock's waiters alone do not
	// say Drain is waiting (other timers of the server wait on it too), so
	// the count is waited for as well.
	finished := false
	var res DrainResult
	closedNow := func(want int) int {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			if !finished {
				select {
				case res = <-drained:
					finished = true
				default:
				}
			}
			got := int(h.metric("wayfinder_xds_drain_closed_streams_total"))
			if got >= want && (finished || h.clock.HasWaiters()) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("Drain closed %d streams and neither waited for its next turn nor finished, want %d closed", got, want)
			}
			time.Sleep(time.Millisecond) // polling the metric and the fake clock's waiters, bounded by deadline
		}
	}

	if got := closedNow(1); got != 1 {
		t.Fatalf("at the start of the drain %d streams closed, want 1", got)
	}
	if code, body := h.get("/healthz/ready"); code != 503 {
		t.Errorf("/healthz/ready while draining = %d %q, want 503", code, body)
	}
	// Refused before its first request is read.
	late := h.connect(nodeID("late"), ingressLabels)
	if err := late.streamError(); status.Code(err) != codes.Unavailable {
		t.Errorf("a new stream while draining ended with %v, want Unavailable", err)
	}
	if got := h.metric("wayfinder_xds_drain_refused_streams_total"); got != 1 {
		t.Errorf("refused streams metric %v, want 1", got)
	}

	for step := 1; step < n; step++ {
		h.clock.Step(d / n)
		if got := closedNow(step + 1); got != step+1 {
			t.Fatalf("after %v of the drain %d streams closed, want %d (one per %v)", time.Duration(step)*d/n, got, step+1, d/n)
		}
	}
	if !finished {
		select {
		case res = <-drained:
		case <-time.After(wait):
			t.Fatal("Drain did not return after the last stream")
		}
	}
	if res.Closed != n || res.Early != 0 || res.Took != (n-1)*d/n {
		t.Errorf("Drain = %+v, want %d closed, none early, took %v", res, n, (n-1)*d/n)
	}
	for i, c := range clients {
		if err := c.streamError(); status.Code(err) != codes.Unavailable {
			t.Errorf("gateway %d: stream ended with %v, want Unavailable (retried by Envoy)", i, err)
		}
	}
}

// A drain whose context ends (the grace period is over) closes what is
// left at once, state of the world and delta streams alike, and says how
// many went early.
func TestDrainCutShortClosesTheRestAtOnce(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	const n = 5
	clients := make([]*adsClient, n)
	for i := range clients {
		clients[i] = h.connect(nodeID(fmt.Sprintf("gw-%d", i)), ingressLabels)
		clients[i].subscribe(resource.ClusterType)
		clients[i].next(resource.ClusterType)
	}
	// Delta streams are drained alike.
	delta := h.connectDelta(nodeID("gw-delta"), ingressLabels, nil)
	delta.subscribe(resource.ClusterType)
	delta.next(resource.ClusterType)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := h.s.Drain(ctx, time.Hour)
	if res.Closed != n+1 || res.Early != n {
		t.Errorf("Drain with an ended context = %+v, want %d closed, %d of them early", res, n+1, n)
	}
	if err := delta.streamError(); status.Code(err) != codes.Unavailable {
		t.Errorf("delta gateway: stream ended with %v, want Unavailable", err)
	}
	for i, c := range clients {
		if err := c.streamError(); status.Code(err) != codes.Unavailable {
			t.Errorf("gateway %d: stream ended with %v, want Unavailable", i, err)
		}
	}
}
