package xds

import (
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/subscription"
)

// deltaOut is a delta response the cache built for a stream's watch, with
// the versions the client holds once it is sent (next; shared when it is
// a view's set's own version map).
type deltaOut struct {
	req    *discovery.DeltaDiscoveryRequest
	resp   *discovery.DeltaDiscoveryResponse
	body   *snapshot.Body // the shared serialized response (package snapshot)
	next   map[string]string
	shared bool
}

// deltaWatchState is what the delta stream loop keeps per type.
type deltaWatchState struct {
	cancel func()
	sub    *subscription.Subscription
}

// serveDelta runs one delta (incremental) ADS stream, like serveSotw:
// requests are read on their own goroutine and handled in order with the
// cache's responses. Before a request is handled every queued response is
// sent (a delta response is never superseded: each carries changes the
// client must see). A request changes its type's subscription only after
// that type's watch is cancelled, so the cache never reads a subscription
// being changed.
func (s *DiscoveryServer) serveDelta(str deltaStream) error {
	ctx := str.Context()
	id := s.deltaIDs.Add(1)
	cb := callbacks{s}
	reqs := recvAll(ctx, s.ctx, str.Recv)
	if err := cb.OnDeltaStreamOpen(ctx, id, resource.AnyType); err != nil {
		return err
	}
	var node *core.Node
	watches := map[string]*deltaWatchState{}
	out := newOutbox[*deltaOut]()
	var nonce int64
	defer func() {
		for _, w := range watches {
			w.cancel()
		}
		cb.OnDeltaStreamClosed(id, node)
	}()

	send := func(o *deltaOut) error {
		nonce++
		o.resp.Nonce = strconv.FormatInt(nonce, 10)
		cb.OnStreamDeltaResponse(id, o.resp, snapshot.DeltaSize(o.body, o.resp))
		if err := str.sendBody(o.resp, o.body); err != nil {
			return status.Error(codes.Unavailable, err.Error())
		}
		if w := watches[o.req.GetTypeUrl()]; w != nil {
			w.sub.SetKnown(o.next, o.shared)
		}
		return nil
	}
	sendAll := func() error {
		for _, o := range out.take() {
			if err := send(o); err != nil {
				return err
			}
		}
		return nil
	}

	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-ctx.Done(): // evicted, draining, or the client went
			return nil
		case <-out.ready:
			if err := sendAll(); err != nil {
				return err
			}
		case req, ok := <-reqs:
			if !ok {
				return nil
			}
			if err := sendAll(); err != nil {
				return err
			}
			if !s.awaitFirstPush(ctx) {
				return nil
			}
			if err := cb.OnStreamDeltaRequest(id, req, limits.DeltaShape(req)); err != nil {
				return err
			}
			// The request is kept with its watch: the node (read once, on
			// the first request) and a NACK's detail (recorded, clipped)
			// go now.
			node, req.Node, req.ErrorDetail = nil, nil, nil
			typeURL := req.GetTypeUrl()
			if typeURL == "" {
				return status.Error(codes.InvalidArgument, "type URL is required for ADS")
			}
			w := watches[typeURL]
			if w == nil {
				w = &deltaWatchState{cancel: func() {}, sub: subscription.NewDelta(req.GetResourceNamesSubscribe(),
					req.GetResourceNamesUnsubscribe(), req.GetInitialResourceVersions(), s.legacyWildcard(typeURL))}
				watches[typeURL] = w
			} else {
				w.cancel()
				w.sub.UpdateDelta(req.GetResourceNamesSubscribe(), req.GetResourceNamesUnsubscribe())
			}
			if err := s.limitSubscription(streamKey{delta: true, id: id}, typeURL, w.sub); err != nil {
				w.cancel = func() {}
				return err
			}
			cancel, err := s.openWatch(streamKey{delta: true, id: id}, &watch{deltaReq: req, sub: w.sub, deltaOut: out})
			if err != nil {
				w.cancel = func() {}
				return err
			}
			w.cancel = cancel
			s.dropRequestLists(req)
		}
	}
}

// dropRequestLists lets go of a delta request's name lists once its
// subscription has taken them in: the request stays with its watch (and
// the response it causes) until the next request of its type, and would
// otherwise keep an unsubscribe list, or a later request's ignored initial
// versions, for as long. Under mu, since the watch is open now.
func (s *DiscoveryServer) dropRequestLists(req *discovery.DeltaDiscoveryRequest) {
	s.mu.Lock()
	req.ResourceNamesSubscribe, req.ResourceNamesUnsubscribe, req.InitialResourceVersions = nil, nil, nil
	s.mu.Unlock()
}
