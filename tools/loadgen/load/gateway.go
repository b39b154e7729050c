package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
)

const (
	sotwMethod  = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	deltaMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

var streamDesc = &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}

// initPhase follows Envoy's initialization: clusters, then their
// endpoints, then listeners (which pull routes).
type initPhase int

const (
	waitClusters initPhase = iota
	waitEndpoints
	initDone
)

// Bits of the types a gateway has ACKed.
var typeBit = map[string]uint8{
	resource.ClusterType:  1,
	resource.EndpointType: 2,
	resource.ListenerType: 4,
	resource.RouteType:    8,
}

// gateway is one simulated Envoy. Only its run goroutine touches it until
// Run has waited for that goroutine.
type gateway struct {
	r    *runner
	id   int
	conn *grpc.ClientConn
	node *corev3.Node

	phase   initPhase
	acked   uint8
	streams int

	sotw  map[string]*sotwSub
	delta map[string]*deltaSub

	// cold and update are the convergence times, -1 until reached.
	cold, update time.Duration
	bytes        int64
	// raw are the last ACKed responses by type, kept for the dump.
	raw map[string][]byte
}

func newGateway(r *runner, id int, conn *grpc.ClientConn, node *corev3.Node) *gateway {
	g := &gateway{r: r, id: id, conn: conn, node: node, cold: -1, update: -1,
		sotw: map[string]*sotwSub{}, delta: map[string]*deltaSub{}}
	for _, t := range typeOrder {
		g.sotw[t] = &sotwSub{}
		g.delta[t] = newDeltaSub()
	}
	if id == 0 && r.opts.DumpDir != "" {
		g.raw = map[string][]byte{}
	}
	return g
}

// wireResponse receives a (delta) discovery response through xdswire: the
// framing is read, the resources are looked up in the parse cache, and
// nothing else is kept (but the raw bytes, for the dumping gateway).
type wireResponse struct {
	cache   *parseCache
	delta   bool
	keepRaw bool

	version, typeURL, nonce string
	removed                 []string
	size                    int
	// entry is the content's parse, waited for into p once the received
	// bytes are released (see parseCache.start).
	entry *entry
	p     *parsed
	raw   []byte
}

func (w *wireResponse) DecodeWire(b []byte) error {
	r, err := xdswire.ReadResponse(b, w.delta)
	if err != nil {
		return err
	}
	w.version, w.typeURL, w.nonce, w.removed, w.size = r.Version, r.TypeURL, r.Nonce, r.Removed, len(b)
	w.entry = w.cache.start(r.TypeURL, w.delta, r.Sum, r.Resources)
	if w.keepRaw {
		w.raw = bytes.Clone(b)
	}
	return nil
}

// run keeps a stream open until ctx ends, reconnecting with backoff.
func (g *gateway) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		got, err := g.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			g.r.unimplemented.Store(true)
			g.r.errorf("gateway %d: server does not implement this ADS mode: %v", g.id, err)
			g.r.stop()
			return
		}
		g.r.errorf("gateway %d: stream failed: %v", g.id, err)
		if got {
			failures = 0
		}
		ceiling := min(g.r.opts.BackoffMax, g.r.opts.BackoffBase<<min(failures, 20))
		failures++
		// Full jitter, as Envoy's backoff strategy.
		t := time.NewTimer(rand.N(ceiling) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// stream runs one ADS stream; got reports whether any response arrived.
func (g *gateway) stream(ctx context.Context) (got bool, err error) {
	method := sotwMethod
	if g.r.opts.Delta {
		method = deltaMethod
	}
	cs, err := g.conn.NewStream(ctx, streamDesc, method, grpc.ForceCodecV2(xdswire.Codec{}))
	if err != nil {
		return false, err
	}
	if g.streams > 0 {
		g.r.reconnects.Add(1)
	}
	g.streams++
	s := &stream{cs: cs, node: g.node}
	if g.r.opts.Delta {
		err = g.startDelta(s)
	} else {
		err = g.startSotW(s)
	}
	for err == nil {
		resp := &wireResponse{cache: g.r.cache, delta: g.r.opts.Delta, keepRaw: g.raw != nil}
		if err = cs.RecvMsg(resp); err != nil {
			break
		}
		resp.p = resp.entry.wait()
		got = true
		g.r.responses.Add(1)
		g.bytes += int64(resp.size)
		if g.r.opts.Delta {
			err = g.handleDelta(s, resp)
		} else {
			err = g.handleSotW(s, resp)
		}
	}
	if errors.Is(err, io.EOF) {
		// A failed send reports io.EOF; the status comes from Recv.
		err = cs.RecvMsg(&wireResponse{cache: g.r.cache, delta: g.r.opts.Delta})
	}
	return got, err
}

// stream is one gRPC stream and whether the node went out on it.
type stream struct {
	cs       grpc.ClientStream
	node     *corev3.Node
	sentNode bool
}

// nodeOnce returns the node for the stream's first request only.
func (s *stream) nodeOnce() *corev3.Node {
	if s.sentNode {
		return nil
	}
	s.sentNode = true
	return s.node
}

// acceptedAll records an ACK and, once every type the config needs has
// been ACKed, the cold convergence.
func (g *gateway) ack(typeURL string, resp *wireResponse, needEDS, needRDS bool) {
	g.acked |= typeBit[typeURL]
	if typeURL == resource.EndpointType && g.r.opts.OnEndpointMarker != nil {
		for _, id := range resp.p.markers {
			g.r.opts.OnEndpointMarker(g.id, id)
		}
	}
	if typeURL == resource.RouteType && g.r.opts.OnRouteMarker != nil {
		for _, id := range resp.p.routeMarkers {
			g.r.opts.OnRouteMarker(g.id, id)
		}
	}
	if g.raw != nil {
		g.raw[typeURL] = resp.raw
	}
	if typeURL == resource.RouteType && g.update < 0 && resp.p.prefixes[g.r.opts.UpdatePrefix] {
		if at := g.r.triggerAt.Load(); at > 0 {
			g.update = g.r.since() - time.Duration(at)
			if g.raw != nil {
				g.r.dump("update", g.raw)
			}
			countDown(&g.r.updateLeft, g.r.updateDone)
		}
	}
	if g.cold >= 0 {
		return
	}
	want := typeBit[resource.ClusterType] | typeBit[resource.ListenerType]
	if needEDS {
		want |= typeBit[resource.EndpointType]
	}
	if needRDS {
		want |= typeBit[resource.RouteType]
	}
	if g.acked&want == want {
		g.cold = g.r.since()
		if g.raw != nil {
			g.r.dump("cold", g.raw)
		}
		countDown(&g.r.coldLeft, g.r.coldDone)
	}
}
