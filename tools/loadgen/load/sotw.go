package load

import (
	"slices"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// sotwSub is a gateway's state-of-the-world subscription of one type.
type sotwSub struct {
	requested bool
	names     []string // sorted; shared with the parse cache, never modified
	namesWire []byte   // names encoded (encodeNames); shared likewise
	version   string   // last ACKed
	nonce     string   // of the last response on this stream
}

// startSotW subscribes on a new stream: CDS on the first, and on a
// reconnect every type subscribed before, with its last accepted version
// and no nonce, as Envoy does.
func (g *gateway) startSotW(s *stream) error {
	if g.streams == 1 {
		g.sotw[resource.ClusterType].requested = true
		if g.r.opts.EagerLDS {
			g.phase = initDone
			g.sotw[resource.ListenerType].requested = true
		}
	}
	for _, t := range typeOrder {
		sub := g.sotw[t]
		sub.nonce = ""
		if sub.requested {
			if err := g.sendSotW(s, t, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *gateway) sendSotW(s *stream, typeURL string, nack *statuspb.Status) error {
	sub := g.sotw[typeURL]
	req, err := sotwRequest(s.nodeOnce(), sub.version, sub.namesWire, typeURL, sub.nonce, nack)
	if err != nil {
		return err
	}
	return s.cs.SendMsg(req)
}

// subscribeSotW requests names of typeURL (encoded as namesWire) if they
// differ from the current subscription.
func (g *gateway) subscribeSotW(s *stream, typeURL string, names []string, namesWire []byte) error {
	sub := g.sotw[typeURL]
	if sub.requested && slices.Equal(sub.names, names) {
		return nil
	}
	sub.requested, sub.names, sub.namesWire = true, names, namesWire
	return g.sendSotW(s, typeURL, nil)
}

func (g *gateway) handleSotW(s *stream, resp *wireResponse) error {
	t := resp.typeURL
	sub, ok := g.sotw[t]
	if !ok || !sub.requested {
		return nil // like Envoy, ignore a type that was not asked for
	}
	sub.nonce = resp.nonce
	if err := resp.p.err; err != nil {
		g.r.nack(g.id, t, err)
		if err := g.sendSotW(s, t, &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}); err != nil {
			return err
		}
		if t == resource.EndpointType && g.phase == waitEndpoints {
			return g.startListeners(s) // a failed fetch ends the wait
		}
		return nil
	}
	sub.version = resp.version
	if err := g.sendSotW(s, t, nil); err != nil {
		return err
	}
	switch t {
	case resource.ClusterType:
		if err := g.subscribeSotW(s, resource.EndpointType, resp.p.refs, resp.p.refsWire); err != nil {
			return err
		}
		if g.phase == waitClusters {
			g.phase = waitEndpoints
			if len(resp.p.refs) == 0 {
				if err := g.startListeners(s); err != nil {
					return err
				}
			}
		}
	case resource.EndpointType:
		if g.phase == waitEndpoints {
			if err := g.startListeners(s); err != nil {
				return err
			}
		}
	case resource.ListenerType:
		if err := g.subscribeSotW(s, resource.RouteType, resp.p.refs, resp.p.refsWire); err != nil {
			return err
		}
	}
	g.ack(t, resp, len(g.sotw[resource.EndpointType].names) > 0, len(g.sotw[resource.RouteType].names) > 0)
	return nil
}

// startListeners ends initialization: LDS is requested.
func (g *gateway) startListeners(s *stream) error {
	g.phase = initDone
	return g.subscribeSotW(s, resource.ListenerType, nil, nil)
}
