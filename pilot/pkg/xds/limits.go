package xds

import (
	"context"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/subscription"
)

// The server's side of the client limits (package limits): what it asks
// the Limiter at each step of a stream, with the stream state and the
// sizes of what it serves, which the limits on names grow with.

// sendWithin writes one response with send and waits at most the send
// timeout for it (limits.Limiter.SendWithin).
func (s *DiscoveryServer) sendWithin(ctx context.Context, typeURL string, send func() error) error {
	return s.limits.SendWithin(ctx, s.ctx, snapshot.ShortType(typeURL), send)
}

// admit decides whether a new stream may start: refused while draining,
// else as limits.Limiter.Admit says. The stream counts against its
// identity and peer from here on, waiting included, until it calls
// release.
func (s *DiscoveryServer) admit(ctx context.Context) (release func(), err error) {
	if err := s.refuseIfDraining(); err != nil {
		return nil, err
	}
	release, err = s.limits.Admit(ctx, s.ctx)
	if err != nil {
		return nil, err
	}
	// Queued behind the admission rate while Drain began.
	if err := s.refuseIfDraining(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// sotwShape measures a SotW request. A request naming the very list the
// stream's subscription came from (an ACK: the codec shares the list, see
// wire.NameSet) reuses its shape rather than walking the names again.
func sotwShape(req *discovery.DiscoveryRequest, sub *subscription.Subscription) limits.RequestShape {
	if sub != nil && snapshot.SameNameList(req.GetResourceNames(), sub.List()) {
		return limits.SotwShape(req, sub.ListShape())
	}
	return limits.SotwShape(req, nil)
}

// limitRequest checks a request against the stream's limits before
// anything else looks at it (limits.Limiter.CheckRequest). A request over
// a limit ends the stream with ResourceExhausted.
func (s *DiscoveryServer) limitRequest(key streamKey, typeURL string, sh limits.RequestShape) error {
	s.mu.Lock()
	st := s.streams[key]
	if st == nil {
		s.mu.Unlock()
		return nil // onRequest reports it
	}
	peer := st.peer
	limit, msg := s.limits.CheckRequest(&st.limits, typeURL, len(st.types), st.types[typeURL] == nil, sh, s.nameLimitsLocked(typeURL))
	s.mu.Unlock()
	if limit == "" {
		return nil
	}
	return s.limits.RefuseRequest(peer, typeURL, limit, msg, sh)
}

// limitSubscription checks what a stream subscribes to of a type once a
// request changed it: how many names, how many bytes. Over a limit, the
// stream ends with ResourceExhausted.
func (s *DiscoveryServer) limitSubscription(key streamKey, typeURL string, sub *subscription.Subscription) error {
	s.mu.Lock()
	st := s.streams[key]
	if st == nil {
		s.mu.Unlock()
		return nil // openWatch reports it
	}
	peer := st.peer
	nl := s.nameLimitsLocked(typeURL)
	s.mu.Unlock()
	names, bytes := sub.Size()
	return s.limits.CheckSubscription(peer, typeURL, names, bytes, nl)
}

// nameLimitsLocked returns the limits on names of typeURL. The caller
// holds mu.
func (s *DiscoveryServer) nameLimitsLocked(typeURL string) limits.Names {
	return s.limits.Names(s.served.Of(typeURL))
}

// servedStats is, per served type, the largest set of it recently sent
// to any proxy (limits.Served). Guarded by DiscoveryServer.mu.
type servedStats struct{ limits.Served }

// pushed notes a push's sets: its clusters and endpoints and every
// group's view. Groups translated later (a proxy of a new configuration
// connecting) are noted by noteView. The caller holds mu.
func (s *servedStats) pushed(now time.Time, st *push.State) {
	s.Turn(now)
	s.noteServices(st.Clusters, st.Endpoints)
	// A namespace view (its own DestinationRules, or services exported to
	// it alone) can serve more clusters than the shared sets.
	for _, sv := range st.Views {
		s.noteServices(sv.Clusters, sv.Endpoints)
	}
	for _, g := range st.Groups {
		s.noteView(g.View)
	}
}

// noteServices notes a set of clusters and its endpoints. The caller
// holds mu.
func (s *servedStats) noteServices(clusters, endpoints *snapshot.TypeSet) {
	for i, set := range []*snapshot.TypeSet{clusters, endpoints} {
		if set != nil {
			s.Note(snapshot.Types[snapshot.CDS+i], set.NameStat())
		}
	}
}

// noteView notes the sets of a view some proxy is sent. The caller holds mu.
func (s *servedStats) noteView(v *snapshot.View) {
	if v == nil {
		return
	}
	for i, set := range v.Sets {
		s.Note(snapshot.Types[i], set.NameStat())
	}
}
