package xds

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

// callbacks receives the stream loops' events for both SotW and delta
// streams. They run on the stream's goroutine, before the cache sees a
// request (On*Request) and before a response is written (On*Response),
// and hold mu only briefly.
type callbacks struct{ s *DiscoveryServer }

// OnStreamOpen records a SotW stream; its proxy is known at the first request.
func (c callbacks) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.s.openStream(ctx, streamKey{id: id}, typeURL)
}

// OnDeltaStreamOpen records a delta stream.
func (c callbacks) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.s.openStream(ctx, streamKey{delta: true, id: id}, typeURL)
}

// OnStreamClosed forgets a SotW stream.
func (c callbacks) OnStreamClosed(id int64, _ *core.Node) { c.s.closeStream(streamKey{id: id}) }

// OnDeltaStreamClosed forgets a delta stream.
func (c callbacks) OnDeltaStreamClosed(id int64, _ *core.Node) {
	c.s.closeStream(streamKey{delta: true, id: id})
}

// OnStreamRequest identifies the proxy on a stream's first request, tracks
// ACKs and NACKs, and hands the request to the cache. Returning an error
// ends the stream with it.
func (c callbacks) OnStreamRequest(id int64, req *discovery.DiscoveryRequest, shape limits.RequestShape) error {
	if err := c.s.limitRequest(streamKey{id: id}, req.GetTypeUrl(), shape); err != nil {
		return err
	}
	return c.s.onRequest(streamKey{id: id}, req.GetNode(), req.GetTypeUrl(), req.GetResponseNonce(), req.GetVersionInfo(), req.GetErrorDetail())
}

// OnStreamDeltaRequest is OnStreamRequest for delta streams. Delta requests
// carry no version; an ACK or NACK refers to the response by nonce.
func (c callbacks) OnStreamDeltaRequest(id int64, req *discovery.DeltaDiscoveryRequest, shape limits.RequestShape) error {
	if err := c.s.limitRequest(streamKey{delta: true, id: id}, req.GetTypeUrl(), shape); err != nil {
		return err
	}
	return c.s.onRequest(streamKey{delta: true, id: id}, req.GetNode(), req.GetTypeUrl(), req.GetResponseNonce(), "", req.GetErrorDetail())
}

// OnStreamResponse notes what is being sent, so the proxy's answer can be
// matched to a version by its nonce and the stream's holdings are known.
func (c callbacks) OnStreamResponse(id int64, resp *discovery.DiscoveryResponse, size int) {
	c.s.onResponse(streamKey{id: id}, resp.GetTypeUrl(), resp.GetVersionInfo(), resp.GetNonce(), size,
		func(f *inflight) bool { return f.sotw == resp })
}

// OnStreamDeltaResponse is OnStreamResponse for delta streams.
func (c callbacks) OnStreamDeltaResponse(id int64, resp *discovery.DeltaDiscoveryResponse, size int) {
	c.s.onResponse(streamKey{delta: true, id: id}, resp.GetTypeUrl(), resp.GetSystemVersionInfo(), resp.GetNonce(), size,
		func(f *inflight) bool { return f.delta == resp })
}

func (s *DiscoveryServer) openStream(ctx context.Context, key streamKey, typeURL string) error {
	if typeURL != resource.AnyType {
		return grpcstatus.Errorf(codes.Unimplemented, "only aggregated discovery (ADS) is served, not %s", typeURL)
	}
	st := &streamState{key: key, openedAt: s.clock.Now(), types: map[string]*typeStatus{}, identity: model.IdentityFrom(ctx), cancel: streamCancelFrom(ctx)}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		st.peer = p.Addr.String()
	}
	s.mu.Lock()
	s.streams[key] = st
	s.mu.Unlock()
	return nil
}

// closeStream forgets the stream, and the proxy with its view when this
// was its last stream.
func (s *DiscoveryServer) closeStream(key streamKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[key]
	delete(s.streams, key)
	if st == nil {
		return
	}
	for _, ts := range st.types {
		ts.watch = nil
	}
	if st.proxy == nil {
		return
	}
	p := st.proxy
	delete(p.streams, key)
	if len(p.streams) > 0 {
		return
	}
	delete(s.proxies, p.proxy.ID)
	s.metrics.connected.Set(float64(len(s.proxies)))
	s.limits.InfoPeer(st.peer, "proxy disconnected", "proxy", limits.Clip(p.proxy.ID), "connected", s.clock.Since(p.connectedAt))
}

func (s *DiscoveryServer) onRequest(key streamKey, node *core.Node, typeURL, nonce, version string, errDetail *status.Status) error {
	s.mu.Lock()
	st := s.streams[key]
	if st == nil {
		s.mu.Unlock()
		return grpcstatus.Errorf(codes.Internal, "stream %d is not known", key.id)
	}
	if st.proxy == nil {
		s.mu.Unlock()
		proxy, err := model.ParseProxy(node)
		if err != nil {
			s.limits.WarnPeer(st.peer, "ADS stream rejected: invalid node", "node", limits.Clip(node.GetId()), "err", limits.Clip(err.Error()))
			return grpcstatus.Errorf(codes.InvalidArgument, "invalid node id %q: %v", limits.Clip(node.GetId()), limits.Clip(err.Error()))
		}
		if err := checkClaims(proxy, node, st.identity); err != nil {
			s.authFailures.Record(st.peer, security.ReasonNamespaceMismatch, "node claims another namespace",
				"node", limits.Clip(node.GetId()), "identity", st.identity.String(), "err", err)
			return err
		}
		proxy.Identity = st.identity
		if err := s.connect(st, proxy); err != nil {
			s.authFailures.Record(st.peer, security.ReasonIdentityConflict, "node id taken by another identity",
				"node", limits.Clip(node.GetId()), "identity", st.identity.String())
			return err
		}
		s.mu.Lock()
	}
	s.trackRequestLocked(st, typeURL, nonce, version, errDetail)
	s.mu.Unlock()
	return nil
}

func (s *DiscoveryServer) onResponse(key streamKey, typeURL, version, nonce string, size int, match func(*inflight) bool) {
	t := snapshot.MetricType(typeURL)
	s.metrics.pushes.WithLabelValues(t).Inc()
	s.metrics.configSize.WithLabelValues(t).Observe(float64(size))
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[key]
	if st == nil {
		return
	}
	s.commitLocked(st.typeStatus(typeURL), match, version, nonce)
}

// connect registers a stream's proxy and, when a push has happened, gives
// a newly connected proxy its group's view before the cache sees its
// first request. See the package comment for why pushMu is held.
func (s *DiscoveryServer) connect(st *streamState, proxy *model.Proxy) error {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	// state is written only under pushMu, so it can be read here without mu.
	ps := s.state
	var g *push.Group
	newGroup := false
	if ps != nil {
		g, newGroup = s.tr.GroupFor(ps, ps, proxy)
	}

	s.mu.Lock()
	p := s.proxies[proxy.ID]
	if p != nil && p.proxy.Identity == nil && proxy.Identity != nil {
		s.authFailures.Record(p.firstPeer(), security.ReasonIdentityConflict, "unauthenticated streams evicted: their node id was claimed by an authenticated stream",
			"node", limits.Clip(proxy.ID), "identity", proxy.Identity.String())
		s.evictLocked(p)
		p = nil
	}
	if p != nil && !sameIdentity(p.proxy.Identity, proxy.Identity) {
		// Proxies are keyed by node id: a stream proving another identity
		// (or none) must not join, and be served, another's state.
		s.mu.Unlock()
		return grpcstatus.Errorf(codes.PermissionDenied, "node %q is connected as %s; this stream authenticated as %s",
			limits.Clip(proxy.ID), p.proxy.Identity.String(), proxy.Identity.String())
	}
	if p == nil {
		p = &proxyState{proxy: proxy, connectedAt: s.clock.Now(), streams: map[streamKey]*streamState{}, pending: map[string]pendingChange{}}
		s.proxies[proxy.ID] = p
		s.metrics.connected.Set(float64(len(s.proxies)))
		s.limits.InfoPeer(st.peer, "proxy connected", "proxy", limits.Clip(proxy.ID), "namespace", limits.Clip(proxy.Namespace), "labels", limits.ClipAll(proxy.Labels),
			"delta", st.key.delta, "proxyless", push.IsProxyless(proxy))
	}
	p.streams[st.key] = st
	st.proxy = p
	if g != nil {
		s.served.noteView(g.View)
	}
	if g != nil && p.view == nil {
		s.setViewLocked(p, g, s.clock.Now())
	}
	s.mu.Unlock()

	if newGroup {
		s.tr.LogNewErrors(ps)
	}
	return nil
}

// sameIdentity reports whether a and b are the same ServiceAccount (or
// both unauthenticated), however each was verified.
func sameIdentity(a, b *model.Identity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Namespace == b.Namespace && a.ServiceAccount == b.ServiceAccount
}

// trackRequestLocked interprets a request against what the stream was
// sent: the first request of a type, an ACK, or a NACK. A NACK is recorded
// on the stream (and so keeps the rejected content from being sent again);
// the request itself is not changed. The caller holds mu.
func (s *DiscoveryServer) trackRequestLocked(st *streamState, typeURL, nonce, version string, errDetail *status.Status) {
	if nonce == "" {
		return // first request of this type on this stream
	}
	ts := st.typeStatus(typeURL)
	if nonce != ts.sentNonce {
		// The stream loop ignores requests with a stale nonce; a NACK of
		// an older response is still worth knowing about.
		if errDetail != nil {
			s.recordNackLocked(st, ts, "", nonce, version, errDetail)
		}
		return
	}
	if st.key.delta && errDetail == nil {
		version = ts.sentVersion // a delta ACK names the response by nonce only
	}
	switch {
	case errDetail != nil:
		s.recordNackLocked(st, ts, ts.sentVersion, nonce, version, errDetail)
		ts.nackedNonce = nonce
		ts.lastNack.patches = push.TouchedPatches(st.proxy.group, typeURL)
		// Resources EnvoyFilter patches changed: the patches are withheld
		// from them and the group translated again, so the gateway
		// converges on the resources as translated.
		if s.withholdRejected && s.tr.WithholdRejected(st.proxy.group, typeURL) {
			go s.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"envoyfilter-rejected": 1}})
		}
	case nonce == ts.nackedNonce:
		// Still answering the rejected response (e.g. new resource names):
		// the proxy keeps its last good config.
	case version != ts.sentVersion:
		// Neither an ACK nor a NACK: a client asking again from another
		// version (Envoy does not, but a debugging client may). The cache
		// answers it; there is nothing to record.
	default:
		ts.ackedVersion = version
		ts.ackedAt = s.clock.Now()
		p := st.proxy
		if pc, ok := p.pending[typeURL]; ok && pc.version == ts.ackedVersion {
			s.metrics.convergence.Observe(ts.ackedAt.Sub(pc.since).Seconds())
			delete(p.pending, typeURL)
		}
		// Checked first: the arguments alone (clipped strings boxed into
		// a slice) were 1.3% of the server's CPU under endpoint churn,
		// with debug logging off.
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("ACK", "proxy", limits.Clip(p.proxy.ID), "type", limits.Clip(snapshot.ShortType(typeURL)), "version", limits.Clip(ts.ackedVersion))
		}
	}
}

// recordNackLocked logs and counts a rejection and keeps it for syncz.
func (s *DiscoveryServer) recordNackLocked(st *streamState, ts *typeStatus, version, nonce, keeps string, detail *status.Status) {
	// The message is the client's: kept for syncz up to a bound.
	ts.lastNack = &nackRecord{version: limits.ClipTo(version, limits.MaxLoggedBytes), nonce: limits.Clip(nonce), message: limits.ClipTo(detail.GetMessage(), limits.MaxKeptNackBytes),
		code: detail.GetCode(), at: s.clock.Now()}
	s.metrics.rejects.WithLabelValues(snapshot.MetricType(ts.typeURL)).Inc()
	p := st.proxy
	if pc, ok := p.pending[ts.typeURL]; ok && pc.version == version {
		delete(p.pending, ts.typeURL) // it will not converge on a version it rejected
	}
	v := version
	if v == "" {
		v = fmt.Sprintf("unknown (stale nonce %s)", limits.Clip(nonce))
	}
	if st.key.delta {
		keeps = ts.ackedVersion
	}
	s.limits.WarnPeer(st.peer, "proxy rejected config (NACK)", "proxy", limits.Clip(p.proxy.ID), "type", limits.Clip(snapshot.ShortType(ts.typeURL)), "version", limits.Clip(v),
		"keeps", limits.Clip(keeps), "delta", st.key.delta, "error", limits.Clip(detail.GetMessage()))
}

// checkClaims refuses a proxy whose claimed namespace (node id and NAMESPACE
// metadata) is not the namespace it authenticated as. Unauthenticated
// streams (plaintext port) are not checked here: they never get secrets.
func checkClaims(proxy *model.Proxy, node *core.Node, id *model.Identity) error {
	if id == nil {
		return nil
	}
	type claim struct{ where, ns string }
	claims := []claim{{"NAMESPACE metadata", node.GetMetadata().GetFields()["NAMESPACE"].GetStringValue()}}
	if parts := strings.Split(node.GetId(), "~"); len(parts) == 4 {
		if _, ns, ok := strings.Cut(parts[2], "."); ok {
			claims = append(claims, claim{"node id", ns})
		}
	}
	// proxy.Namespace is one of the above; checked too in case parsing
	// ever takes it from elsewhere.
	claims = append(claims, claim{"node", proxy.Namespace})
	for _, c := range claims {
		if c.ns != "" && c.ns != id.Namespace {
			return grpcstatus.Errorf(codes.PermissionDenied, "node %q claims namespace %q (%s) but authenticated as %s, namespace %q",
				limits.Clip(node.GetId()), limits.Clip(c.ns), c.where, id.String(), id.Namespace)
		}
	}
	return nil
}
