package xds

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A node id names one proxy, and a stream that proved an identity outranks
// one that proved none: otherwise anyone reaching the plaintext port could
// take a gateway's node id first and keep the real, authenticated gateway
// out (it would be refused as an identity conflict). So an authenticated
// stream evicts the unauthenticated streams holding its node id; the
// reverse is refused in connect.

// errEvicted ends the streams of an unauthenticated client whose node id an
// authenticated stream claimed.
var errEvicted = errors.New("node id claimed by an authenticated stream")

type streamCancelKey struct{}

// withStreamCancel returns a context for one ADS stream that evict can end:
// the stream's loop returns when it ends.
func withStreamCancel(parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	return context.WithValue(ctx, streamCancelKey{}, cancel), cancel
}

func streamCancelFrom(ctx context.Context) context.CancelCauseFunc {
	c, _ := ctx.Value(streamCancelKey{}).(context.CancelCauseFunc)
	return c
}

// evictLocked ends every stream of p and forgets p, so that the caller can
// register the node id anew. The streams' own closeStream calls come later
// and leave the new holder alone. The caller holds mu.
func (s *DiscoveryServer) evictLocked(p *proxyState) {
	for _, st := range p.streams {
		if st.cancel != nil {
			st.cancel(errEvicted)
		}
		st.proxy = nil
	}
	p.streams = map[streamKey]*streamState{}
	if s.proxies[p.proxy.ID] == p {
		delete(s.proxies, p.proxy.ID)
	}
}

// firstPeer is the address of one of p's streams, for logs; "" when none.
func (p *proxyState) firstPeer() string {
	for _, st := range p.streams {
		return st.peer
	}
	return ""
}

// serveEvictable runs one ADS stream's loop with a context evictLocked
// and the drain can end. The loop returns when it ends (a write waiting
// for the client returns too; see sendWithin), and the stream is closed
// with the status that says why.
func serveEvictable(parent context.Context, run func(ctx context.Context) error) error {
	ctx, cancel := withStreamCancel(parent)
	defer cancel(nil)
	err := run(ctx)
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errEvicted):
		return status.Error(codes.PermissionDenied, "this node id was claimed by an authenticated stream; unauthenticated streams holding it were closed")
	case errors.Is(cause, errDraining):
		// Unavailable: the client retries, through the Service on
		// another replica (see drain.go).
		return status.Error(codes.Unavailable, "this control plane replica is shutting down; reconnect")
	}
	return err
}
