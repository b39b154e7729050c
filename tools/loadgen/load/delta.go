package load

import (
	"maps"
	"slices"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// deltaSub is a gateway's delta subscription of one type and the
// resources it holds: for CDS the EDS name of each cluster, for LDS the
// route names of each listener (other types need only the names).
type deltaSub struct {
	requested bool
	wildcard  bool
	names     map[string]bool
	nonce     string
	refs      map[string][]string
}

func newDeltaSub() *deltaSub {
	return &deltaSub{names: map[string]bool{}, refs: map[string][]string{}}
}

// startDelta subscribes on a new stream: CDS (wildcard) on the first, and
// on a reconnect every type subscribed before with its names. Unlike Envoy
// it sends no initial_resource_versions, so the server resends everything.
func (g *gateway) startDelta(s *stream) error {
	if g.streams == 1 {
		cds := g.delta[resource.ClusterType]
		cds.requested, cds.wildcard = true, true
		if g.r.opts.EagerLDS {
			g.phase = initDone
			lds := g.delta[resource.ListenerType]
			lds.requested, lds.wildcard = true, true
		}
	}
	for _, t := range typeOrder {
		sub := g.delta[t]
		sub.nonce = ""
		if !sub.requested {
			continue
		}
		req := &discoveryv3.DeltaDiscoveryRequest{Node: s.nodeOnce(), TypeUrl: t}
		if !sub.wildcard {
			req.ResourceNamesSubscribe = slices.Sorted(maps.Keys(sub.names))
		}
		if err := s.cs.SendMsg(req); err != nil {
			return err
		}
	}
	return nil
}

// subscribeDelta moves the subscription of typeURL to want, sending the
// difference.
func (g *gateway) subscribeDelta(s *stream, typeURL string, want map[string]bool) error {
	sub := g.delta[typeURL]
	var add, remove []string
	for n := range want {
		if !sub.names[n] {
			add = append(add, n)
		}
	}
	for n := range sub.names {
		if !want[n] {
			remove = append(remove, n)
		}
	}
	if sub.requested && len(add) == 0 && len(remove) == 0 {
		return nil
	}
	slices.Sort(add)
	slices.Sort(remove)
	sub.requested, sub.names = true, want
	return s.cs.SendMsg(&discoveryv3.DeltaDiscoveryRequest{
		Node: s.nodeOnce(), TypeUrl: typeURL, ResourceNamesSubscribe: add, ResourceNamesUnsubscribe: remove,
	})
}

func (g *gateway) handleDelta(s *stream, resp *wireResponse) error {
	t := resp.typeURL
	sub, ok := g.delta[t]
	if !ok || !sub.requested {
		return nil
	}
	sub.nonce = resp.nonce
	if err := resp.p.err; err != nil {
		g.r.nack(g.id, t, err)
		if err := s.cs.SendMsg(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: t, ResponseNonce: resp.nonce,
			ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}}); err != nil {
			return err
		}
		if t == resource.EndpointType && g.phase == waitEndpoints {
			return g.startDeltaListeners(s)
		}
		return nil
	}
	if t == resource.ClusterType || t == resource.ListenerType {
		for i, n := range resp.p.names {
			sub.refs[n] = resp.p.refsOf[i]
		}
		for _, n := range resp.removed {
			delete(sub.refs, n)
		}
	}
	if err := s.cs.SendMsg(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: t, ResponseNonce: resp.nonce}); err != nil {
		return err
	}
	switch t {
	case resource.ClusterType:
		want := refSet(sub.refs)
		if err := g.subscribeDelta(s, resource.EndpointType, want); err != nil {
			return err
		}
		if g.phase == waitClusters {
			g.phase = waitEndpoints
			if len(want) == 0 {
				if err := g.startDeltaListeners(s); err != nil {
					return err
				}
			}
		}
	case resource.EndpointType:
		if g.phase == waitEndpoints {
			if err := g.startDeltaListeners(s); err != nil {
				return err
			}
		}
	case resource.ListenerType:
		if err := g.subscribeDelta(s, resource.RouteType, refSet(sub.refs)); err != nil {
			return err
		}
	}
	g.ack(t, resp, len(g.delta[resource.EndpointType].names) > 0, len(g.delta[resource.RouteType].names) > 0)
	return nil
}

func (g *gateway) startDeltaListeners(s *stream) error {
	g.phase = initDone
	lds := g.delta[resource.ListenerType]
	if lds.requested {
		return nil
	}
	lds.requested, lds.wildcard = true, true
	return s.cs.SendMsg(&discoveryv3.DeltaDiscoveryRequest{Node: s.nodeOnce(), TypeUrl: resource.ListenerType})
}

func refSet(refs map[string][]string) map[string]bool {
	out := map[string]bool{}
	for _, rs := range refs {
		for _, r := range rs {
			out[r] = true
		}
	}
	return out
}
