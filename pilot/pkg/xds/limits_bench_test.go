package xds

import (
	"context"
	"fmt"
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
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// BenchmarkPushWithStuckStreams measures how long a config change takes to
// reach a gateway that reads (from the change to its CDS response) while
// N other streams are blocked in writes because their clients never read.
// With the send deadline per stream the figure does not depend on N.
func BenchmarkPushWithStuckStreams(b *testing.B) {
	for _, stuck := range []int{0, 100, 300} {
		b.Run(fmt.Sprintf("stuck=%d", stuck), func(b *testing.B) { benchPushWithStuck(b, stuck) })
	}
}

func benchPushWithStuck(b *testing.B, stuck int) {
	store := newTestStore(bigConfig(2000, "a.example.com")...)
	s := NewDiscoveryServer(Options{
		Store: store, Errors: store, Generator: &fakeGenerator{},
		Debounce: debounce.Options{QuietPeriod: time.Millisecond, MaxDelay: 10 * time.Millisecond},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: prometheus.NewRegistry(),
		Limits:   limits.Options{SendTimeout: time.Hour},
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	g := grpc.NewServer()
	s.Register(g)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Serve(lis) })
	wg.Go(func() { s.Run(ctx) })
	defer func() { cancel(); g.Stop(); wg.Wait() }()
	s.Synced()
	<-s.FirstPushDone()

	// The good gateway ACKs every CDS response and reports its version.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		b.Fatal(err)
	}
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}})
	if err := stream.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: nodeID("good"), Metadata: meta}, TypeUrl: resource.ClusterType}); err != nil {
		b.Fatal(err)
	}
	versions := make(chan string, 16)
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				close(versions)
				return
			}
			_ = stream.Send(&discovery.DiscoveryRequest{TypeUrl: r.GetTypeUrl(), VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce()})
			versions <- r.GetVersionInfo()
		}
	}()
	<-versions

	for i := range stuck {
		openStuck(b, lis.Addr().String(), nodeID(fmt.Sprintf("stuck-%d", i)), resource.ClusterType, resource.ListenerType)
	}
	deadline := time.Now().Add(wait)
	for s.limits.Sending() < int64(stuck) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d stuck streams blocked", s.limits.Sending(), stuck)
		}
		time.Sleep(5 * time.Millisecond)
	}

	b.ResetTimer()
	for i := range b.N {
		store.set(bigConfig(2001+i, "a.example.com")...)
		s.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"bench": 1}})
		select {
		case _, ok := <-versions:
			if !ok {
				b.Fatal("good stream ended")
			}
		case <-time.After(wait):
			b.Fatalf("push %d did not reach the good gateway with %d streams stuck", i, stuck)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(s.limits.Sending()), "blocked-streams")
}
