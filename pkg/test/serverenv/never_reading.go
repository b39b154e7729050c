package serverenv

import (
	"context"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// NeverReadingGateway opens an ADS stream to addr as gateway pod of
// istio-system (label istio: ingressgateway), asks for clusters and
// listeners and never reads: with gRPC's fixed 64 KiB windows the server's
// writes to it block once the first response is on its way. The stream
// ends with the test; the connection is returned to close it sooner.
func NeverReadingGateway(t testing.TB, addr, pod string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = conn.Close() })
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}})
	node := &core.Node{Id: "router~127.0.0.1~" + pod + ".istio-system~istio-system.svc.cluster.local", Metadata: meta}
	for i, typ := range []string{adsc.ClusterType, adsc.ListenerType} {
		req := &discovery.DiscoveryRequest{TypeUrl: typ}
		if i == 0 {
			req.Node = node
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}
