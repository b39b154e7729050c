package xds

import (
	"context"
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

// sotwOut is a SotW response the cache built for a stream's watch.
type sotwOut struct {
	req  *discovery.DiscoveryRequest
	resp *discovery.DiscoveryResponse
	body *snapshot.Body // the shared serialized response (package snapshot)
}

// sotwWatchState is what the stream loop keeps per type: the open watch's
// cancel, the subscription, and the nonce of the last response sent.
type sotwWatchState struct {
	cancel func()
	sub    *subscription.Subscription
	nonce  string
}

// serveSotw runs one state-of-the-world ADS stream. Requests are read on
// a goroutine of their own; this loop handles them and the cache's
// responses in order, so a stream's responses go out in the order they
// were produced (ordered ADS). A request of a type first cancels that
// type's watch and drops its queued response, if any (the request
// supersedes it), after sending the other types' queued responses. A
// request whose response_nonce is not the last one sent for its type is
// stale and ignored, as the xDS protocol says.
func (s *DiscoveryServer) serveSotw(str sotwStream) error {
	ctx := str.Context()
	id := s.sotwIDs.Add(1)
	cb := callbacks{s}
	reqs := recvAll(ctx, s.ctx, str.Recv)
	if err := cb.OnStreamOpen(ctx, id, resource.AnyType); err != nil {
		return err
	}
	var node *core.Node
	watches := map[string]*sotwWatchState{}
	out := newOutbox[*sotwOut]()
	var nonce int64
	defer func() {
		for _, w := range watches {
			w.cancel()
		}
		cb.OnStreamClosed(id, node)
	}()

	send := func(o *sotwOut) error {
		w := watches[o.req.GetTypeUrl()]
		if w == nil {
			return status.Errorf(codes.Internal, "no watch of %s for a response", limits.Clip(o.req.GetTypeUrl()))
		}
		nonce++
		o.resp.Nonce = strconv.FormatInt(nonce, 10)
		w.nonce = o.resp.Nonce
		cb.OnStreamResponse(id, o.resp, snapshot.SotwSize(o.body, o.resp))
		if err := str.sendBody(o.resp, o.body); err != nil {
			return status.Error(codes.Unavailable, err.Error())
		}
		return nil
	}
	// sendAllExcept sends the queued responses, dropping those of typeURL.
	sendAllExcept := func(typeURL string) error {
		for _, o := range out.take() {
			if o.req.GetTypeUrl() == typeURL {
				continue
			}
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
			if err := sendAllExcept(""); err != nil {
				return err
			}
		case req, ok := <-reqs:
			if !ok {
				return nil
			}
			if !s.awaitFirstPush(ctx) {
				return nil
			}
			// Only the first request must carry the node.
			if req.GetNode() != nil {
				node = req.GetNode()
			} else {
				req.Node = node
			}
			typeURL := req.GetTypeUrl()
			if typeURL == "" {
				return status.Error(codes.InvalidArgument, "type URL is required for ADS")
			}
			w := watches[typeURL]
			var sub *subscription.Subscription
			if w != nil {
				sub = w.sub
			}
			if err := cb.OnStreamRequest(id, req, sotwShape(req, sub)); err != nil {
				return err
			}
			// The request is kept with its watch: the node (read once, on
			// the first request) and a NACK's detail (recorded, clipped)
			// go now.
			node, req.Node, req.ErrorDetail = nil, nil, nil
			if w == nil {
				w = &sotwWatchState{cancel: func() {}, sub: subscription.NewSotw(req.GetResourceNames(), s.legacyWildcard(typeURL))}
				watches[typeURL] = w
			} else {
				if w.nonce != "" && req.GetResponseNonce() != w.nonce {
					s.log.Debug("stale SotW request ignored", "stream", id, "type", limits.Clip(snapshot.ShortType(typeURL)))
					continue
				}
				w.cancel()
				if err := sendAllExcept(typeURL); err != nil {
					return err
				}
				w.sub.SetSotw(req.GetResourceNames())
			}
			if err := s.limitSubscription(streamKey{id: id}, typeURL, w.sub); err != nil {
				return err
			}
			cancel, err := s.openWatch(streamKey{id: id}, &watch{sotwReq: req, sub: w.sub, sotwOut: out})
			if err != nil {
				w.cancel = func() {}
				return err
			}
			w.cancel = cancel
		}
	}
}

// awaitFirstPush waits, before a stream's requests are handled, for the
// first push: the limits on names grow with what the server serves,
// which is known only then (a gateway reconnecting to a restarted server
// names everything it held). Nothing would be answered before it anyway.
// It reports false when the stream or the server ended first.
func (s *DiscoveryServer) awaitFirstPush(ctx context.Context) bool {
	select {
	case <-s.firstPushDone:
		return true
	default:
	}
	select {
	case <-s.firstPushDone:
		return true
	case <-ctx.Done():
		return false
	case <-s.ctx.Done():
		return false
	}
}

// legacyWildcard reports whether an empty first request of typeURL
// subscribes to everything (legacy xDS): not for endpoints, routes and
// secrets, which are only ever asked for by name, so an empty list
// subscribes to nothing and a proxy gets exactly what it names.
func (s *DiscoveryServer) legacyWildcard(typeURL string) bool {
	switch typeURL {
	case resource.EndpointType, resource.RouteType, resource.SecretType:
		return false
	}
	return true
}

// recvAll reads a stream's requests into the returned channel, which is
// closed when the stream ends (or the server stops). Reading on a
// goroutine of its own lets the stream's loop send while a client writes.
func recvAll[T any](ctx, server context.Context, recv func() (*T, error)) <-chan *T {
	ch := make(chan *T)
	go func() {
		defer close(ch)
		for {
			req, err := recv()
			if err != nil {
				return
			}
			select {
			case ch <- req:
			case <-ctx.Done():
				return
			case <-server.Done():
				return
			}
		}
	}()
	return ch
}
