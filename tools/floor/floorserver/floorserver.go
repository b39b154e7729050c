// Package floorserver is the benchmark's floor: an ADS server that does no
// translation. It loads pilot-discovery's own responses, captured by the
// load tool (--dump-dir), serializes each once, and writes the same bytes
// to every stream (state of the world, or delta when the capture is of
// delta responses); on Update it switches to the second capture and sends
// every stream the types whose content changed.
//
// Whatever a run costs the floor is what ADS alone costs on this machine
// (gRPC, HTTP/2 framing, the load tool sharing the CPU), so a benchmark
// that shows the floor beside the control plane separates the cost of
// translation and bookkeeping from the cost of the protocol.
package floorserver

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/tools/internal/xdswire"
	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

// typeOrder is the order in which an update's changed types are sent
// (Envoy's make-before-break order).
var typeOrder = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType}

// Dump is one capture: a pre-serialized DiscoveryResponse per type URL.
type Dump map[string]*xdswire.Frame

// response is what the floor reads and rewrites in a captured response of
// either protocol.
type response interface {
	proto.Message
	GetTypeUrl() string
}

// newResponse returns an empty response of the protocol.
func newResponse(delta bool) response {
	if delta {
		return &discoveryv3.DeltaDiscoveryResponse{}
	}
	return &discoveryv3.DiscoveryResponse{}
}

// setNonce sets a response's nonce, whichever the protocol.
func setNonce(r response, nonce string) {
	switch m := r.(type) {
	case *discoveryv3.DiscoveryResponse:
		m.Nonce = nonce
	case *discoveryv3.DeltaDiscoveryResponse:
		m.Nonce = nonce
	}
}

// LoadDump reads a capture written by the load tool's --dump-dir (one of
// its cold/ or update/ folders): DiscoveryResponses, or with delta
// DeltaDiscoveryResponses. Every response's nonce is replaced by phase and
// type, so nonces differ between captures; the bytes are then fixed for
// the server's life.
func LoadDump(dir, phase string, delta bool) (Dump, error) {
	d := Dump{}
	for typeURL, name := range load.DumpFiles {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		resp := newResponse(delta)
		if err := proto.Unmarshal(b, resp); err != nil {
			return nil, fmt.Errorf("floor: %s: %w", p, err)
		}
		if resp.GetTypeUrl() != typeURL {
			return nil, fmt.Errorf("floor: %s holds %s, want %s", p, resp.GetTypeUrl(), typeURL)
		}
		setNonce(resp, phase+"/"+name)
		out, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		if err != nil {
			return nil, fmt.Errorf("floor: %s: %w", p, err)
		}
		d[typeURL] = &xdswire.Frame{Bytes: out}
	}
	return d, nil
}

// Stats count what the server did.
type Stats struct {
	Streams   int64 `json:"streams"`
	Responses int64 `json:"responses"`
	Bytes     int64 `json:"bytes"`
	ACKs      int64 `json:"acks"`
	NACKs     int64 `json:"nacks"`
	Updates   int64 `json:"updates"`
}

// Server serves a Dump to every stream.
type Server struct {
	log *slog.Logger
	// delta is the protocol of the dumps, and the one served.
	delta bool

	mu      sync.Mutex
	current Dump
	next    Dump
	streams map[chan struct{}]struct{}

	streamsN, responses, bytes, acks, nacks, updates atomic.Int64
}

// New returns a server serving cold, switching to update (if not nil) on
// Update, over state-of-the-world ADS, or over delta ADS with delta (the
// dumps must then hold delta responses).
func New(cold, update Dump, delta bool, logger *slog.Logger) (*Server, error) {
	if len(cold) != len(typeOrder) {
		return nil, errors.New("floor: the cold dump needs all four types")
	}
	if update != nil {
		// Share the frame of every type whose content did not change, so
		// an update resends only what changed.
		merged := Dump{}
		for t, f := range update {
			if c := cold[t]; c != nil && sameContent(c.Bytes, f.Bytes, delta) {
				f = c
			}
			merged[t] = f
		}
		update = merged
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{log: logger, delta: delta, current: cold, next: update, streams: map[chan struct{}]struct{}{}}, nil
}

// sameContent compares two responses without their nonces.
func sameContent(a, b []byte, delta bool) bool {
	ra, rb := newResponse(delta), newResponse(delta)
	if proto.Unmarshal(a, ra) != nil || proto.Unmarshal(b, rb) != nil {
		return bytes.Equal(a, b)
	}
	setNonce(ra, "")
	setNonce(rb, "")
	return proto.Equal(ra, rb)
}

// Register adds the ADS service to g, which must use xdswire.Codec
// (grpc.ForceServerCodecV2) so frames go out as they are. The protocol the
// dumps are not in is answered Unimplemented.
func (s *Server) Register(g *grpc.Server) {
	serve := func(delta bool) func(any, grpc.ServerStream) error {
		return func(_ any, ss grpc.ServerStream) error {
			if delta != s.delta {
				return status.Errorf(codes.Unimplemented, "this floor server was loaded with %s dumps", protocol(s.delta))
			}
			return s.stream(ss)
		}
	}
	g.RegisterService(&grpc.ServiceDesc{
		ServiceName: "envoy.service.discovery.v3.AggregatedDiscoveryService",
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{
			{StreamName: "StreamAggregatedResources", ClientStreams: true, ServerStreams: true, Handler: serve(false)},
			{StreamName: "DeltaAggregatedResources", ClientStreams: true, ServerStreams: true, Handler: serve(true)},
		},
	}, s)
}

func protocol(delta bool) string {
	if delta {
		return "delta"
	}
	return "state-of-the-world"
}

// request is what the floor reads of a request of either protocol.
type request interface {
	proto.Message
	GetTypeUrl() string
	GetResponseNonce() string
	GetErrorDetail() *statuspb.Status
}

// newRequest returns an empty request of the server's protocol.
func (s *Server) newRequest() request {
	if s.delta {
		return &discoveryv3.DeltaDiscoveryRequest{}
	}
	return &discoveryv3.DiscoveryRequest{}
}

// Update switches to the update dump and tells every stream. It reports
// false if there is no update dump or it was already applied.
func (s *Server) Update() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		return false
	}
	s.current, s.next = s.next, nil
	s.updates.Add(1)
	for ch := range s.streams {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return true
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{Streams: s.streamsN.Load(), Responses: s.responses.Load(), Bytes: s.bytes.Load(),
		ACKs: s.acks.Load(), NACKs: s.nacks.Load(), Updates: s.updates.Load()}
}

func (s *Server) dump() Dump {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// stream serves one ADS stream: each requested type gets the current
// frame once; a request that is not the ACK of what was sent (a new
// subscription, changed names, a reconnect) gets it again; an update
// sends the changed frames of the subscribed types.
func (s *Server) stream(ss grpc.ServerStream) error {
	s.streamsN.Add(1)
	notify := make(chan struct{}, 1)
	s.mu.Lock()
	s.streams[notify] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, notify)
		s.mu.Unlock()
	}()

	reqs := make(chan request)
	recvErr := make(chan error, 1)
	go func() {
		for {
			req := s.newRequest()
			if err := ss.RecvMsg(req); err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- req:
			case <-ss.Context().Done():
				return
			}
		}
	}()

	sent := map[string]*xdswire.Frame{}
	send := func(t string, f *xdswire.Frame) error {
		sent[t] = f
		s.responses.Add(1)
		s.bytes.Add(int64(len(f.Bytes)))
		return ss.SendMsg(f)
	}
	for {
		select {
		case <-ss.Context().Done():
			return ss.Context().Err()
		case err := <-recvErr:
			return err
		case req := <-reqs:
			t := req.GetTypeUrl()
			f := s.dump()[t]
			if f == nil {
				return status.Errorf(codes.InvalidArgument, "floor: no dump for type %q", t)
			}
			if req.GetErrorDetail() != nil {
				s.nacks.Add(1)
				s.log.Warn("NACK", "type", t, "err", req.GetErrorDetail().GetMessage())
				continue
			}
			if req.GetResponseNonce() != "" && sent[t] != nil {
				s.acks.Add(1)
				// An ACK of the current frame, or a change of names while
				// subscribed: the frame carries every resource already.
				if sent[t] == f {
					continue
				}
			}
			if err := send(t, f); err != nil {
				return err
			}
		case <-notify:
			d := s.dump()
			for _, t := range typeOrder {
				if prev, ok := sent[t]; ok && prev != d[t] {
					if err := send(t, d[t]); err != nil {
						return err
					}
				}
			}
		}
	}
}
