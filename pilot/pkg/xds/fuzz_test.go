package xds

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// fuzzServer is one discovery server for every fuzz input, behind a real
// gRPC server on an in-memory connection.
type fuzzServer struct {
	s    *DiscoveryServer
	conn *grpc.ClientConn
}

func newFuzzServer(f *testing.F) *fuzzServer {
	store := newTestStore(base()...)
	s := NewDiscoveryServer(Options{
		Store: store, Errors: store, Generator: &fakeGenerator{},
		Debounce: debounce.Options{QuietPeriod: time.Millisecond, MaxDelay: 10 * time.Millisecond, Clock: clock.RealClock{}},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(),
		Clock:    clocktesting.NewFakeClock(t0),
		// The clock stands still: admission would run out of tokens after
		// the burst (it has its own test). Every other limit applies.
		Limits: limits.Options{StreamsPerSecond: -1},
	})
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer(grpc.WaitForHandlers(true))
	s.Register(g)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Serve(lis) })
	wg.Go(func() { s.Run(ctx) })
	s.Synced()
	<-s.FirstPushDone()
	conn, err := grpc.NewClient("passthrough:///fuzz", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		_ = conn.Close()
		cancel()
		g.Stop()
		wg.Wait()
	})
	return &fuzzServer{s: s, conn: conn}
}

// fuzzSeed encodes requests as a fuzz input: a protocol byte (even: SotW,
// odd: delta), then per request a 2-byte length and its encoding.
func fuzzSeed(delta bool, reqs ...proto.Message) []byte {
	out := []byte{0}
	if delta {
		out[0] = 1
	}
	for _, r := range reqs {
		b, _ := proto.Marshal(r)
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		out = append(out, b...)
	}
	return out
}

// splitFuzz decodes a fuzz input into encoded requests (at most 64).
func splitFuzz(data []byte) (delta bool, reqs [][]byte) {
	if len(data) == 0 {
		return false, nil
	}
	delta, data = data[0]%2 == 1, data[1:]
	for len(data) >= 2 && len(reqs) < 64 {
		n := int(binary.BigEndian.Uint16(data))
		data = data[2:]
		n = min(n, len(data))
		reqs = append(reqs, data[:n])
		data = data[n:]
	}
	return delta, reqs
}

// lastNonce is the nonce placeholder: a request whose nonce is "#" gets
// the last nonce the server sent on the stream, so sequences can ACK and
// NACK.
const lastNonce = "#"

// barrierType is asked for last, to know the server handled the rest.
const barrierType = "type.googleapis.com/wayfinder.fuzz.Barrier"

// FuzzADSRequests feeds arbitrary sequences of DiscoveryRequests or
// DeltaDiscoveryRequests into the server over a real gRPC stream. Nothing
// may panic, the stream either stays up or ends with a status, and once it
// has ended the server holds nothing for it.
func FuzzADSRequests(f *testing.F) {
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}})
	node := &core.Node{Id: nodeID("fuzz"), Metadata: meta}
	f.Add(fuzzSeed(false,
		&discovery.DiscoveryRequest{Node: node, TypeUrl: resource.ClusterType},
		&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResponseNonce: lastNonce, VersionInfo: "x"},
		&discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"outbound|9080||reviews.default.svc.cluster.local"}},
		&discovery.DiscoveryRequest{TypeUrl: resource.ListenerType},
		&discovery.DiscoveryRequest{TypeUrl: resource.ListenerType, ResponseNonce: lastNonce, ErrorDetail: &rpcstatus.Status{Code: 3, Message: "bad"}},
		&discovery.DiscoveryRequest{TypeUrl: resource.RouteType, ResourceNames: []string{"http.80", "*"}},
		&discovery.DiscoveryRequest{TypeUrl: "type.googleapis.com/made.up.Type"},
	))
	f.Add(fuzzSeed(true,
		&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resource.ClusterType, InitialResourceVersions: map[string]string{"gone": "1"}},
		&discovery.DeltaDiscoveryRequest{TypeUrl: resource.ClusterType, ResponseNonce: lastNonce},
		&discovery.DeltaDiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNamesSubscribe: []string{"outbound|9080||reviews.default.svc.cluster.local", "x"}},
		&discovery.DeltaDiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNamesUnsubscribe: []string{"x", "*"}},
		&discovery.DeltaDiscoveryRequest{TypeUrl: resource.SecretType, ResourceNamesSubscribe: []string{"kubernetes://gw-cert"}, ResponseNonce: lastNonce,
			ErrorDetail: &rpcstatus.Status{Code: 13, Message: "nack"}},
	))
	f.Add(fuzzSeed(false, &discovery.DiscoveryRequest{Node: &core.Node{Id: "not~an~istio~id~at all"}, TypeUrl: resource.ClusterType}))
	f.Add(fuzzSeed(true, &discovery.DeltaDiscoveryRequest{TypeUrl: ""}))

	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		delta, raw := splitFuzz(data)
		fs.run(t, node, delta, raw)
	})
}

func (fs *fuzzServer) run(t *testing.T, node *core.Node, delta bool, raw [][]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client := discovery.NewAggregatedDiscoveryServiceClient(fs.conn)
	var (
		send  func(proto.Message) error
		recv  func() (string, string, error)
		first = true
	)
	var mu sync.Mutex
	nonce := ""
	if delta {
		st, err := client.DeltaAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send = func(m proto.Message) error { return st.Send(m.(*discovery.DeltaDiscoveryRequest)) }
		recv = func() (string, string, error) { r, err := st.Recv(); return r.GetTypeUrl(), r.GetNonce(), err }
	} else {
		st, err := client.StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send = func(m proto.Message) error { return st.Send(m.(*discovery.DiscoveryRequest)) }
		recv = func() (string, string, error) { r, err := st.Recv(); return r.GetTypeUrl(), r.GetNonce(), err }
	}
	ended := make(chan error, 1)
	answered := make(chan struct{})
	go func() {
		for {
			typ, n, err := recv()
			if err != nil {
				ended <- err
				return
			}
			if typ == barrierType {
				close(answered)
			}
			mu.Lock()
			nonce = n
			mu.Unlock()
		}
	}()
	for _, b := range raw {
		var m proto.Message
		if delta {
			r := &discovery.DeltaDiscoveryRequest{}
			if proto.Unmarshal(b, r) != nil {
				continue
			}
			if first && r.Node == nil {
				r.Node = node
			}
			if r.ResponseNonce == lastNonce {
				mu.Lock()
				r.ResponseNonce = nonce
				mu.Unlock()
			}
			m = r
		} else {
			r := &discovery.DiscoveryRequest{}
			if proto.Unmarshal(b, r) != nil {
				continue
			}
			if first && r.Node == nil {
				r.Node = node
			}
			if r.ResponseNonce == lastNonce {
				mu.Lock()
				r.ResponseNonce = nonce
				mu.Unlock()
			}
			m = r
		}
		first = false
		if send(m) != nil {
			break // the server ended the stream
		}
	}
	// A request of a type no input names is answered (empty) only after
	// every request before it was handled, unless the stream has ended.
	var barrier proto.Message = &discovery.DiscoveryRequest{TypeUrl: barrierType, Node: node}
	if delta {
		barrier = &discovery.DeltaDiscoveryRequest{TypeUrl: barrierType, Node: node}
	}
	if send(barrier) == nil {
		select {
		case <-answered:
		case err := <-ended:
			ended <- err
		case <-ctx.Done():
			t.Fatal("the stream neither answered nor ended")
		}
	}
	cancel()
	if err := <-ended; status.Code(err) == 0 && err != io.EOF {
		t.Fatalf("stream ended without a status: %v", err)
	}
	// Once the stream is gone the server holds nothing for it.
	deadline := time.Now().Add(wait)
	for {
		fs.s.mu.Lock()
		streams, proxies := len(fs.s.streams), len(fs.s.proxies)
		fs.s.mu.Unlock()
		if streams == 0 && proxies == 0 && fs.s.limits.Sending() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the stream ended the server still holds %d streams, %d proxies, %d sends",
				streams, proxies, fs.s.limits.Sending())
		}
		time.Sleep(time.Millisecond)
	}
}
