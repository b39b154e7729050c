package xds

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Draining a replica that is going away. Closing every ADS stream at once
// sends every gateway of the replica to the others in the same instant: a
// reconnect wave in which each of them asks for its full config together.
// Drain instead refuses new streams at once (and readiness fails, so the
// Service stops sending new connections), then closes the open streams one
// by one at even intervals over the drain duration. Each stream ends with
// codes.Unavailable, which Envoy (and gRPC clients) retry: through the
// Service they land on another replica, a few at a time.

// errDraining is the cause that ends a stream closed by Drain.
var errDraining = errors.New("replica draining")

// drainState is the Drain half of the DiscoveryServer.
type drainState struct {
	draining atomic.Bool
	// closed counts streams Drain closed, refused new streams refused
	// while draining.
	closed, refused prometheus.Counter
}

func newDrainState(reg prometheus.Registerer) *drainState {
	d := &drainState{
		closed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_xds_drain_closed_streams_total",
			Help: "ADS streams closed (codes.Unavailable, retried by the client) while this replica drained on shutdown.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_xds_drain_refused_streams_total",
			Help: "New ADS streams refused (codes.Unavailable) because this replica was draining.",
		}),
	}
	reg.MustRegister(d.closed, d.refused)
	return d
}

// Draining reports whether Drain has begun: readiness fails and new
// streams are refused.
func (s *DiscoveryServer) Draining() bool { return s.drain.draining.Load() }

// refuseIfDraining refuses a new stream while draining.
func (s *DiscoveryServer) refuseIfDraining() error {
	if !s.Draining() {
		return nil
	}
	s.drain.refused.Inc()
	return status.Error(codes.Unavailable, "this control plane replica is shutting down; connect to another")
}

// StopAccepting makes readiness fail and refuses every new stream from
// now on, with codes.Unavailable; Drain does it first too.
func (s *DiscoveryServer) StopAccepting() {
	if !s.drain.draining.Swap(true) {
		s.log.Info("draining: readiness fails and new ADS streams are refused")
	}
}

// DrainResult says what Drain did.
type DrainResult struct {
	// Closed is the number of streams Drain closed; Early the ones among
	// them closed at once because ctx ended before their turn.
	Closed, Early int
	// Took is how long the drain lasted.
	Took time.Duration
}

// Drain stops accepting ADS streams and closes the open ones spread evenly
// over d: with n streams, the i-th (oldest first) is closed at i*d/n from
// the start, so the first goes at once and the last at (n-1)*d/n. A stream
// opened while draining (admitted just before) is closed at the end. When
// ctx ends first, the streams not yet closed are closed at once. Streams
// end with codes.Unavailable. Drain returns when every stream it closed
// has been told to end; the gRPC server's GracefulStop waits for the
// handlers themselves.
func (s *DiscoveryServer) Drain(ctx context.Context, d time.Duration) DrainResult {
	s.StopAccepting()
	start := s.clock.Now()
	streams := s.openStreams()
	s.log.Info("draining: closing the open ADS streams spread over the drain duration",
		"streams", len(streams), "drainDuration", d)
	var res DrainResult
	for i, st := range streams {
		at := start.Add(time.Duration(int64(d) * int64(i) / int64(len(streams))))
		early := !s.waitUntil(ctx, at)
		if s.closeDraining(st) {
			res.Closed++
			if early {
				res.Early++
			}
		}
	}
	// Admitted just before draining began, registered after the snapshot.
	for _, st := range s.openStreams() {
		if s.closeDraining(st) {
			res.Closed++
		}
	}
	res.Took = s.clock.Since(start)
	s.log.Info("drained: every ADS stream closed", "closed", res.Closed, "closedEarly", res.Early, "took", res.Took)
	return res
}

// openStreams are the streams Drain can close, oldest first (then by key,
// so that the order is deterministic).
func (s *DiscoveryServer) openStreams() []*streamState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*streamState, 0, len(s.streams))
	for _, st := range s.streams {
		if st.cancel != nil {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b *streamState) int {
		if c := a.openedAt.Compare(b.openedAt); c != 0 {
			return c
		}
		if a.key.delta != b.key.delta {
			if a.key.delta {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.key.id, b.key.id)
	})
	return out
}

// waitUntil waits on the server's clock until at; false when ctx ended
// first.
func (s *DiscoveryServer) waitUntil(ctx context.Context, at time.Time) bool {
	wait := at.Sub(s.clock.Now())
	if wait <= 0 {
		return true
	}
	t := s.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// closeDraining ends st with errDraining; false when it had already ended
// (the client left, or it was evicted) or was already closed by Drain.
func (s *DiscoveryServer) closeDraining(st *streamState) bool {
	s.mu.Lock()
	open := s.streams[st.key] == st
	cancel := st.cancel
	if open {
		st.cancel = nil // closed once
	}
	s.mu.Unlock()
	if !open || cancel == nil {
		return false
	}
	cancel(errDraining)
	s.drain.closed.Inc()
	s.log.Debug("drain: closed ADS stream", "peer", st.peer, "opened", st.openedAt)
	return true
}
