package main

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// propTracker records, for numbered route changes, when each was written
// to the API server and when each proxy ACKed a route table carrying it.
// The load tool calls ack on proxy gw's goroutine for every marker of
// every route table that proxy ACKs (state of the world repeats the
// markers already seen), so each (proxy, change) pair counts once; the
// change loop reads the figures once the change reached every proxy.
type propTracker struct {
	proxies int
	// since is the time since the tracker started (a clock the tests
	// set).
	since func() time.Duration
	// Per change: the write's start and the API server's answer (ns since
	// start, 0 until set), the proxies that have it and the last of their
	// ACKs (ns since start).
	writeAt, wroteAt, lastAck []atomic.Int64
	count                     []atomic.Int32
	// seen[gw][k]: proxy gw ACKed change k; only gw's goroutine touches
	// seen[gw].
	seen [][]bool
	// notify is signalled when a change reaches its last proxy.
	notify chan struct{}
}

func newPropTracker(proxies, changes int) *propTracker {
	t := &propTracker{
		proxies: proxies,
		writeAt: make([]atomic.Int64, changes), wroteAt: make([]atomic.Int64, changes), lastAck: make([]atomic.Int64, changes),
		count: make([]atomic.Int32, changes), seen: make([][]bool, proxies), notify: make(chan struct{}, 1),
	}
	for gw := range t.seen {
		t.seen[gw] = make([]bool, changes)
	}
	start := time.Now()
	t.since = func() time.Duration { return time.Since(start) }
	return t
}

// now is the time since the start in ns, at least 1 (0 means unset).
func (t *propTracker) now() int64 { return max(int64(t.since()), 1) }

// writing notes that change k's API write starts now.
func (t *propTracker) writing(k int) { t.writeAt[k].Store(t.now()) }

// written notes that the API server answered change k's write.
func (t *propTracker) written(k int) { t.wroteAt[k].Store(t.now()) }

// ack is load.Options.OnRouteMarker: proxy gw ACKed a route table
// carrying change k. ACKs of a change not yet written (a marker id the
// bench did not issue) are ignored.
func (t *propTracker) ack(gw, k int) {
	if k < 0 || k >= len(t.writeAt) || gw < 0 || gw >= len(t.seen) || t.seen[gw][k] || t.writeAt[k].Load() == 0 {
		return
	}
	t.seen[gw][k] = true
	now := t.now()
	for {
		old := t.lastAck[k].Load()
		if now <= old || t.lastAck[k].CompareAndSwap(old, now) {
			break
		}
	}
	if int(t.count[k].Add(1)) == t.proxies {
		select {
		case t.notify <- struct{}{}:
		default:
		}
	}
}

// delivered reports whether every proxy ACKed change k.
func (t *propTracker) delivered(k int) bool { return int(t.count[k].Load()) >= t.proxies }

// wait returns once change k reached every proxy (true), or when the
// timeout passes or ctx ends (false).
func (t *propTracker) wait(ctx context.Context, k int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !t.delivered(k) {
		select {
		case <-t.notify:
		case <-deadline.C:
			return t.delivered(k)
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// propSummary are one phase's figures over its changes.
type propSummary struct {
	// Changes were issued; Complete reached every proxy before their
	// timeout; Failed were refused by the API server.
	Changes  int `json:"changes"`
	Complete int `json:"complete"`
	Failed   int `json:"failed,omitempty"`
	// All*: per change, from the start of the API write to the last
	// proxy's ACK of a route table carrying it.
	AllP50Ms float64 `json:"all_p50_ms"`
	AllP99Ms float64 `json:"all_p99_ms"`
	AllMaxMs float64 `json:"all_max_ms"`
	// Answered*: the same from the API server's answer to the write (0
	// where the proxies had it first): the control plane's share.
	AnsweredP50Ms float64 `json:"answered_p50_ms"`
	AnsweredP99Ms float64 `json:"answered_p99_ms"`
	// Write*: the API server's answer to the write.
	WriteP50Ms float64 `json:"write_p50_ms"`
	WriteP99Ms float64 `json:"write_p99_ms"`
}

// summarize computes the figures of changes [from, to), leaving out the
// failed ones (failed[k]).
func (t *propTracker) summarize(from, to int, failed func(k int) bool) propSummary {
	s := propSummary{Changes: to - from}
	var all, answered, writes []time.Duration
	for k := from; k < to; k++ {
		if failed(k) {
			s.Failed++
			continue
		}
		w0, w1 := t.writeAt[k].Load(), t.wroteAt[k].Load()
		if w1 > 0 {
			writes = append(writes, time.Duration(w1-w0))
		}
		if !t.delivered(k) {
			continue
		}
		last := t.lastAck[k].Load()
		all = append(all, time.Duration(last-w0))
		answered = append(answered, time.Duration(max(last-w1, 0)))
	}
	s.Complete = len(all)
	slices.Sort(all)
	slices.Sort(answered)
	slices.Sort(writes)
	if len(all) > 0 {
		s.AllP50Ms, s.AllP99Ms, s.AllMaxMs = msOf(pct(all, 50)), msOf(pct(all, 99)), msOf(all[len(all)-1])
		s.AnsweredP50Ms, s.AnsweredP99Ms = msOf(pct(answered, 50)), msOf(pct(answered, 99))
	}
	if len(writes) > 0 {
		s.WriteP50Ms, s.WriteP99Ms = msOf(pct(writes, 50)), msOf(pct(writes, 99))
	}
	return s
}
