package adsc

import (
	"context"
	"errors"
	"fmt"
)

// EventKind says what happened to a response, or that the stream ended.
type EventKind int

const (
	// ACK: the response was accepted and ACKed.
	ACK EventKind = iota + 1
	// NACK: the response was rejected (decode, validation or Config.Reject)
	// and NACKed; Event.Err says why.
	NACK
	// Ignored: the response was for a type the client never requested;
	// like Envoy, the client neither applies nor answers it.
	Ignored
	// StreamEnd: the stream ended; Event.Err is the cause (ErrClosed after
	// Close). It is always the last event.
	StreamEnd
)

func (k EventKind) String() string {
	switch k {
	case ACK:
		return "ACK"
	case NACK:
		return "NACK"
	case Ignored:
		return "Ignored"
	case StreamEnd:
		return "StreamEnd"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one received response (or the end of the stream).
type Event struct {
	// Seq numbers events from 1 in the order they happened.
	Seq  uint64
	Kind EventKind
	// TypeURL, Version and Nonce are the response's.
	TypeURL string
	Version string
	Nonce   string
	// Names are the names of the response's resources that decoded, sorted.
	Names []string
	// Err is why a response was NACKed, or why the stream ended.
	Err error
}

var (
	// ErrClosed is the end of a client that was closed with Close.
	ErrClosed = errors.New("adsc: client closed")
	// ErrEventsDropped is returned by Cursor.Next when events the cursor had
	// not read yet were dropped from the event log (see Config.EventLogSize).
	ErrEventsDropped = errors.New("adsc: events dropped from the log")
)

// eventLog keeps the most recent events; the client's mutex guards it.
type eventLog struct {
	limit  int     // < 0 keeps everything
	base   uint64  // Seq of events[0]
	events []Event // consecutive Seqs from base
}

func (l *eventLog) next() uint64 { return l.base + uint64(len(l.events)) }

func (l *eventLog) append(ev Event) Event {
	if l.base == 0 {
		l.base = 1
	}
	ev.Seq = l.next()
	l.events = append(l.events, ev)
	// Trim in chunks so appends stay amortized O(1).
	if l.limit >= 0 && len(l.events) > 2*l.limit {
		drop := len(l.events) - l.limit
		l.events = append([]Event(nil), l.events[drop:]...)
		l.base += uint64(drop)
	}
	return ev
}

// Cursor reads a client's events in order. A Cursor is not safe for use by
// several goroutines at once; create one per reader.
type Cursor struct {
	c    *Client
	next uint64
}

// Events returns a cursor at the oldest event still kept, normally the first
// response of the stream.
func (c *Client) Events() *Cursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	base := c.log.base
	if base == 0 {
		base = 1
	}
	return &Cursor{c: c, next: base}
}

// NewEvents returns a cursor that reads only events after this call.
func (c *Client) NewEvents() *Cursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.log.next()
	if next == 0 {
		next = 1
	}
	return &Cursor{c: c, next: next}
}

// Next blocks until the next event and returns it. After the StreamEnd event
// it returns the client's end error (ErrClosed after Close). If events were
// dropped before the cursor read them it returns an error wrapping
// ErrEventsDropped once and continues with the oldest kept event.
func (cur *Cursor) Next(ctx context.Context) (Event, error) {
	c := cur.c
	for {
		c.mu.Lock()
		l := &c.log
		switch {
		case cur.next < l.base:
			n := l.base - cur.next
			cur.next = l.base
			c.mu.Unlock()
			return Event{}, fmt.Errorf("%w: %d events", ErrEventsDropped, n)
		case cur.next < l.next():
			ev := l.events[cur.next-l.base]
			cur.next++
			c.mu.Unlock()
			return ev, nil
		case c.ended:
			err := c.endErr
			c.mu.Unlock()
			return Event{}, err
		}
		wake := c.changed
		c.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// NextMatching returns the next event for which match is true, skipping the
// others. Errors are those of Next.
func (cur *Cursor) NextMatching(ctx context.Context, match func(Event) bool) (Event, error) {
	for {
		ev, err := cur.Next(ctx)
		if err != nil {
			return ev, err
		}
		if match(ev) {
			return ev, nil
		}
	}
}
