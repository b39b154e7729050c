package xds

import (
	"context"
	"fmt"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// callbacks receives go-control-plane's stream events. They run on the
// stream's goroutine, before the cache sees a request (OnStreamRequest) and
// before a response is written (OnStreamResponse), and hold mu only briefly.
type callbacks struct{ s *DiscoveryServer }

// OnStreamOpen records the stream; its proxy is known at the first request.
func (c callbacks) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	if typeURL != resource.AnyType {
		return status.Errorf(codes.Unimplemented, "only aggregated discovery (ADS) is served, not %s", typeURL)
	}
	st := &streamState{id: id, openedAt: c.s.clock.Now(), types: map[string]*typeStatus{}}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		st.peer = p.Addr.String()
	}
	c.s.mu.Lock()
	c.s.streams[id] = st
	c.s.mu.Unlock()
	return nil
}

// OnStreamClosed forgets the stream, and the proxy with its snapshot when
// this was its last stream.
func (c callbacks) OnStreamClosed(id int64, _ *core.Node) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	delete(s.streams, id)
	if st == nil || st.proxy == nil {
		return
	}
	p := st.proxy
	delete(p.streams, id)
	if len(p.streams) > 0 {
		return
	}
	delete(s.proxies, p.proxy.ID)
	s.cache.ClearSnapshot(p.proxy.ID)
	s.metrics.connected.Set(float64(len(s.proxies)))
	s.log.Info("proxy disconnected", "proxy", p.proxy.ID, "connected", s.clock.Since(p.connectedAt))
}

// OnStreamRequest identifies the proxy on a stream's first request and
// tracks ACKs and NACKs. Returning an error ends the stream with it.
func (c callbacks) OnStreamRequest(id int64, req *discovery.DiscoveryRequest) error {
	s := c.s
	s.mu.Lock()
	st := s.streams[id]
	if st == nil {
		s.mu.Unlock()
		return status.Errorf(codes.Internal, "stream %d is not known", id)
	}
	if st.proxy == nil {
		s.mu.Unlock()
		proxy, err := model.ParseProxy(req.GetNode())
		if err != nil {
			s.log.Warn("ADS stream rejected: invalid node", "node", req.GetNode().GetId(), "peer", st.peer, "err", err)
			return status.Errorf(codes.InvalidArgument, "invalid node id %q: %v", req.GetNode().GetId(), err)
		}
		s.connect(st, proxy)
		s.mu.Lock()
	}
	s.trackRequestLocked(st, req)
	s.mu.Unlock()
	return nil
}

// OnStreamResponse notes what is being sent, so the proxy's answer can be
// matched to a version by its nonce.
func (c callbacks) OnStreamResponse(_ context.Context, id int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	s := c.s
	t := shortType(resp.GetTypeUrl())
	s.metrics.pushes.WithLabelValues(t).Inc()
	s.metrics.configSize.WithLabelValues(t).Observe(float64(proto.Size(resp)))
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[id]
	if st == nil {
		return
	}
	ts := st.typeStatus(resp.GetTypeUrl())
	ts.sentVersion = resp.GetVersionInfo()
	ts.sentNonce = resp.GetNonce()
	ts.sentAt = s.clock.Now()
	ts.sends++
}

// connect registers a stream's proxy and, when a push has happened, gives
// a newly connected proxy its group's snapshot before the cache sees its
// first request. See the package comment for why pushMu is held.
func (s *DiscoveryServer) connect(st *streamState, proxy *model.Proxy) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	// state is written only under pushMu, so it can be read here without mu.
	ps := s.state
	var g *group
	newGroup := false
	if ps != nil {
		g, newGroup = s.groupFor(ps, proxy)
	}

	s.mu.Lock()
	p := s.proxies[proxy.ID]
	if p == nil {
		p = &proxyState{proxy: proxy, connectedAt: s.clock.Now(), streams: map[int64]*streamState{}, pending: map[string]pendingChange{}}
		s.proxies[proxy.ID] = p
		s.metrics.connected.Set(float64(len(s.proxies)))
		s.log.Info("proxy connected", "proxy", proxy.ID, "peer", st.peer, "namespace", proxy.Namespace, "labels", proxy.Labels)
	}
	p.streams[st.id] = st
	st.proxy = p
	if g != nil && p.snapshot == nil {
		s.setSnapshotLocked(p, g, s.clock.Now())
	}
	s.mu.Unlock()

	if newGroup {
		s.logNewErrors(ps)
	}
}

// trackRequestLocked interprets a request against what the stream was
// sent: the first request of a type, an ACK, or a NACK. For a NACK it
// rewrites the request's version to the rejected one; see the package
// comment. The caller holds mu.
func (s *DiscoveryServer) trackRequestLocked(st *streamState, req *discovery.DiscoveryRequest) {
	nonce := req.GetResponseNonce()
	if nonce == "" {
		return // first request of this type on this stream
	}
	typeURL := req.GetTypeUrl()
	ts := st.typeStatus(typeURL)
	proxyID := st.proxy.proxy.ID
	if nonce != ts.sentNonce {
		// go-control-plane ignores requests with a stale nonce; a NACK of
		// an older response is still worth knowing about.
		if req.GetErrorDetail() != nil {
			s.recordNackLocked(st, ts, typeURL, "", nonce, req)
		}
		return
	}
	switch {
	case req.GetErrorDetail() != nil:
		s.recordNackLocked(st, ts, typeURL, ts.sentVersion, nonce, req)
		ts.nackedNonce = nonce
		req.VersionInfo = ts.sentVersion
	case nonce == ts.nackedNonce:
		// Still answering the rejected response (e.g. new resource names):
		// the proxy holds the rejected version as far as the cache goes.
		req.VersionInfo = ts.sentVersion
	case req.GetVersionInfo() != ts.sentVersion:
		// Neither an ACK nor a NACK: a client asking again from another
		// version (Envoy does not, but a debugging client may). The cache
		// answers it; there is nothing to record.
	default:
		ts.ackedVersion = req.GetVersionInfo()
		ts.ackedAt = s.clock.Now()
		p := st.proxy
		if pc, ok := p.pending[typeURL]; ok && pc.version == ts.ackedVersion {
			s.metrics.convergence.Observe(ts.ackedAt.Sub(pc.since).Seconds())
			delete(p.pending, typeURL)
		}
		s.log.Debug("ACK", "proxy", proxyID, "type", shortType(typeURL), "version", ts.ackedVersion)
	}
}

// recordNackLocked logs and counts a rejection and keeps it for syncz.
func (s *DiscoveryServer) recordNackLocked(st *streamState, ts *typeStatus, typeURL, version, nonce string, req *discovery.DiscoveryRequest) {
	detail := req.GetErrorDetail()
	ts.lastNack = &nackRecord{version: version, nonce: nonce, message: detail.GetMessage(), code: detail.GetCode(), at: s.clock.Now()}
	s.metrics.rejects.WithLabelValues(shortType(typeURL)).Inc()
	p := st.proxy
	if pc, ok := p.pending[typeURL]; ok && pc.version == version {
		delete(p.pending, typeURL) // it will not converge on a version it rejected
	}
	v := version
	if v == "" {
		v = fmt.Sprintf("unknown (stale nonce %s)", nonce)
	}
	s.log.Warn("proxy rejected config (NACK)", "proxy", p.proxy.ID, "type", shortType(typeURL), "version", v,
		"keeps", req.GetVersionInfo(), "error", detail.GetMessage())
}
