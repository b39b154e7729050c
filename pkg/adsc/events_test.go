package adsc

import (
	"context"
	"errors"
	"testing"
)

// newLogClient is a client with only its event machinery, for unit tests.
func newLogClient(limit int) *Client {
	return &Client{state: emptyState(), log: eventLog{limit: limit}, changed: make(chan struct{})}
}

func TestEventLogKeepsAndDrops(t *testing.T) {
	c := newLogClient(2)
	all := c.Events()
	for i := range 5 {
		c.publish(nil, &Event{Kind: ACK, Version: string(rune('a' + i))})
	}
	// Five events with room for two: trimming keeps the newest, in chunks.
	if c.log.base != 4 || len(c.log.events) != 2 {
		t.Fatalf("log base %d with %d events, want base 4 with 2", c.log.base, len(c.log.events))
	}
	ctx := testCtx(t)
	if _, err := all.Next(ctx); !errors.Is(err, ErrEventsDropped) {
		t.Fatalf("first Next of a cursor left behind = %v, want ErrEventsDropped", err)
	}
	for _, want := range []struct {
		seq     uint64
		version string
	}{{4, "d"}, {5, "e"}} {
		ev, err := all.Next(ctx)
		if err != nil || ev.Seq != want.seq || ev.Version != want.version {
			t.Errorf("Next = %+v (%v), want seq %d version %s", ev, err, want.seq, want.version)
		}
	}

	// A cursor from now sees only what comes after it, and waits for it.
	fresh := c.NewEvents()
	got := make(chan Event, 1)
	go func() {
		ev, _ := fresh.NextMatching(ctx, func(ev Event) bool { return ev.Kind == NACK })
		got <- ev
	}()
	c.publish(nil, &Event{Kind: ACK, Version: "f"})
	c.publish(nil, &Event{Kind: NACK, Version: "g"})
	if ev := <-got; ev.Seq != 7 || ev.Version != "g" {
		t.Errorf("NextMatching = %+v, want the NACK with seq 7", ev)
	}

	// A cancelled wait returns the context's error.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := fresh.Next(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with nothing to read = %v, want context.Canceled", err)
	}
}

func TestEventLogUnlimited(t *testing.T) {
	c := newLogClient(-1)
	for range 100 {
		c.publish(nil, &Event{Kind: ACK})
	}
	cur := c.Events()
	for i := range 100 {
		ev, err := cur.Next(testCtx(t))
		if err != nil || ev.Seq != uint64(i+1) {
			t.Fatalf("event %d = %+v (%v)", i, ev, err)
		}
	}
}
