package adsc

import (
	"context"
	"net"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// record is an append-only list that tests wait on without polling.
type record[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{}
}

func newRecord[T any]() *record[T] { return &record[T]{wake: make(chan struct{})} }

func (r *record[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	close(r.wake)
	r.wake = make(chan struct{})
}

func (r *record[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// waitFor returns the items once cond holds for them.
func (r *record[T]) waitFor(ctx context.Context, cond func([]T) bool) ([]T, error) {
	for {
		r.mu.Lock()
		items, wake := append([]T(nil), r.items...), r.wake
		r.mu.Unlock()
		if cond(items) {
			return items, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return items, ctx.Err()
		}
	}
}

// controlPlane is a real go-control-plane ADS server with a snapshot cache
// in ADS mode, on loopback, recording what it sees.
type controlPlane struct {
	addr  string
	cache cachev3.SnapshotCache
	// requests are those the server's callbacks saw (the server fills in
	// the node on requests that omit it); raw are as they arrived on the
	// wire; responses are what the server sent.
	requests  *record[*discoverygrpc.DiscoveryRequest]
	raw       *record[*discoverygrpc.DiscoveryRequest]
	responses *record[*discoverygrpc.DiscoveryResponse]
	stopOnce  sync.Once
	stopFn    func()
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	cp := &controlPlane{
		cache:     cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil),
		requests:  newRecord[*discoverygrpc.DiscoveryRequest](),
		raw:       newRecord[*discoverygrpc.DiscoveryRequest](),
		responses: newRecord[*discoverygrpc.DiscoveryResponse](),
	}
	callbacks := serverv3.CallbackFuncs{
		StreamRequestFunc: func(_ int64, req *discoverygrpc.DiscoveryRequest) error {
			cp.requests.add(proto.Clone(req).(*discoverygrpc.DiscoveryRequest))
			return nil
		},
		StreamResponseFunc: func(_ context.Context, _ int64, _ *discoverygrpc.DiscoveryRequest, resp *discoverygrpc.DiscoveryResponse) {
			cp.responses.add(proto.Clone(resp).(*discoverygrpc.DiscoveryResponse))
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	xds := serverv3.NewServer(ctx, cp.cache, callbacks)
	gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, &recordingStream{ServerStream: ss, raw: cp.raw})
	}))
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(gs, xds)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatalf("listen: %v", err)
	}
	cp.addr = lis.Addr().String()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	cp.stopFn = func() {
		gs.Stop()
		cancel()
		<-served
	}
	t.Cleanup(cp.stop)
	return cp
}

// stop ends the server and every stream on it.
func (cp *controlPlane) stop() { cp.stopOnce.Do(cp.stopFn) }

func (cp *controlPlane) set(t *testing.T, node *corev3.Node, snap *cachev3.Snapshot) {
	t.Helper()
	if err := snap.Consistent(); err != nil {
		t.Fatalf("snapshot %s is not consistent: %v", snap.GetVersion(ClusterType), err)
	}
	if err := cp.cache.SetSnapshot(context.Background(), node.GetId(), snap); err != nil {
		t.Fatalf("set snapshot: %v", err)
	}
}

// recordingStream records requests exactly as received, before the server
// touches them.
type recordingStream struct {
	grpc.ServerStream
	raw *record[*discoverygrpc.DiscoveryRequest]
}

func (s *recordingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if req, ok := m.(*discoverygrpc.DiscoveryRequest); ok && err == nil {
		s.raw.add(proto.Clone(req).(*discoverygrpc.DiscoveryRequest))
	}
	return err
}
