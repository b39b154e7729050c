package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// The binary's limit flags work, a megabyte node id is logged clipped and
// a bounded number of times, and the debug server refuses POST.
func TestHostileClientsAgainstTheBinary(t *testing.T) {
	p := startProcess(t, copyDir(t, "../../manifests/samples"), "--xds-request-burst", "5", "--xds-requests-per-second", "0.001")
	p.WaitLog("config synced and first push computed", 30*time.Second)

	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(8<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := discovery.NewAggregatedDiscoveryServiceClient(conn)
	streamErr := func(st discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient) error {
		for {
			if _, err := st.Recv(); err != nil {
				return err
			}
		}
	}

	huge := "bad-" + strings.Repeat("x", 1<<20)
	floodStart := time.Now()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st, err := client.StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: huge}, TypeUrl: adsc.ClusterType}); err != nil {
			t.Fatal(err)
		}
		if err := streamErr(st); status.Code(err) != codes.InvalidArgument || len(err.Error()) > 2048 {
			t.Fatalf("invalid node: %.300v", err)
		}
		cancel()
	}

	// Six requests at once: over a burst of five.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: "flood-1", Namespace: "istio-system"})
	for i := range 6 {
		req := &discovery.DiscoveryRequest{TypeUrl: adsc.ClusterType}
		if i == 0 {
			req.Node = node
		}
		if err := st.Send(req); err != nil {
			break
		}
	}
	if err := streamErr(st); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("flooding stream ended with %v, want ResourceExhausted", err)
	}

	resp, err := http.Post("http://"+p.HTTPAddr+"/debug/configz", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /debug/configz = %d", resp.StatusCode)
	}
	if code, body := httpGet(t, "http://"+p.HTTPAddr+"/metrics"); code != 200 || !strings.Contains(body, `wayfinder_xds_limit_exceeded_total{limit="request_rate"} 1`) {
		t.Errorf("metrics %d: request_rate limit not counted", code)
	}

	logs := p.LogText()
	// The per-peer limit lets a burst of lines through, then one every
	// 6 s: on a slow machine the 20 huge requests may span a refill.
	limit := 10 + int(time.Since(floodStart)/(6*time.Second))
	if n := strings.Count(logs, "invalid node"); n == 0 || n > limit {
		t.Errorf("%d log lines about the invalid node from one peer, want 1 to %d", n, limit)
	}
	if len(logs) > 1<<20 {
		t.Errorf("the log grew to %d bytes: a client's megabyte was written", len(logs))
	}
	for line := range strings.Lines(logs) {
		if len(line) > 8192 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
}
