package featuretest

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/heap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// bulkServicesYAML is n ServiceEntries: a CDS response of several hundred
// kilobytes, many times a stream's 64 KiB flow control window.
func bulkServicesYAML(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: bulk-%[1]d, namespace: bulk}
spec:
  hosts: [bulk-%[1]d.bulk.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.21}]
`, i)
	}
	return b.String()
}

// metricValue reads an unlabelled metric from /metrics.
func (e *env) metricValue(name string) float64 {
	e.t.Helper()
	_, body := e.get("/metrics")
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				e.t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// Hundreds of gateways that stop reading do not delay an edit reaching a
// good gateway; at their send deadline they are closed and counted, and
// the heap returns near where it was.
func TestNeverReadingStreamsDoNotDelayOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 300 connections")
	}
	const stuck = 300
	// Long enough that 300 connections open before the first of them is
	// closed, on a loaded 2-core machine too.
	const sendTimeout = 10 * time.Second
	files := baseFiles()
	files["bulk.yaml"] = bulkServicesYAML(2000)
	e := &env{t: t, dir: t.TempDir()}
	for name, data := range files {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir, Logger: serverenv.Logger(t, slog.LevelWarn),
		Limits: bootstrap.Limits{XDS: limits.Options{SendTimeout: sendTimeout}}})
	good := e.gateway("good-1", publicLabels, nil)
	waitFor(t, good, "initial config", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	base := heap.AfterGC()
	conns := make([]*grpc.ClientConn, stuck)
	for i := range conns {
		conns[i] = serverenv.NeverReadingGateway(t, e.server.GRPCAddr().String(), "stuck-"+strconv.Itoa(i))
	}
	// Connected: open, or already closed at the send deadline if opening
	// them all took longer than it.
	poll.Until(t, "every stuck gateway connected", func() bool {
		return e.metricValue("pilot_xds")+e.metricValue("pilot_xds_write_timeout") == stuck+1
	}, poll.Timeout(30*time.Second), poll.Interval(20*time.Millisecond))

	start := time.Now()
	e.write("routes.yaml", routesYAML("/edited"))
	waitFor(t, good, "the edit", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/edited") })
	took := time.Since(start)
	t.Logf("edit reached the good gateway in %v with %d never-reading streams", took, stuck)
	if took >= sendTimeout {
		t.Errorf("the edit took %v, past the stuck streams' send deadline (%v): they delayed it", took, sendTimeout)
	}

	poll.Until(t, "stuck streams closed at their send deadline", func() bool {
		return e.metricValue("pilot_xds_write_timeout") >= stuck
	}, poll.Timeout(30*time.Second), poll.Interval(20*time.Millisecond))
	poll.Until(t, "only the good gateway connected", func() bool { return e.metricValue("pilot_xds") == 1 }, poll.Timeout(30*time.Second), poll.Interval(20*time.Millisecond))
	if got := e.metricValue("pilot_xds_write_timeout"); got != stuck {
		t.Errorf("pilot_xds_write_timeout = %v, want %d", got, stuck)
	}
	e.write("routes.yaml", routesYAML("/again"))
	waitFor(t, good, "a later edit", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/again") })

	for _, c := range conns {
		_ = c.Close()
	}
	after := heap.AfterGC()
	t.Logf("heap %d MiB before the stuck streams, %d MiB after they closed", base>>20, after>>20)
	if after > base+64<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB after the stuck streams closed", base>>20, after>>20)
	}
}

// The gRPC limits apply on the real server: a message over the size bound
// is refused, a connection carries at most the streams allowed (more wait
// until one ends), and the debug server answers GET and HEAD only.
func TestGRPCAndDebugLimits(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	for name, data := range baseFiles() {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir, Logger: serverenv.Logger(t, slog.LevelWarn),
		Limits: bootstrap.Limits{MaxRecvMsgBytes: 64 << 10, MaxStreamsPerConnection: 2}})

	conn, err := grpc.NewClient(e.server.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system"})
	open := func(ctx context.Context, pod string, names ...string) (discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient, error) {
		st, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
		if err != nil {
			return nil, err
		}
		node := &core.Node{Id: "router~127.0.0.1~" + pod + ".istio-system~istio-system.svc.cluster.local", Metadata: meta}
		return st, st.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: adsc.ClusterType, ResourceNames: names})
	}

	// 100 KB of names in one request: over 64 KiB.
	big := make([]string, 2000)
	for i := range big {
		big[i] = fmt.Sprintf("outbound|80||name-%04d.example.com", i)
	}
	st, err := open(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: adsc.EndpointType, ResourceNames: big}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Recv(); err != nil {
			if status.Code(err) != codes.ResourceExhausted {
				t.Errorf("oversized request ended the stream with %v, want ResourceExhausted", err)
			}
			break
		}
	}

	// Two streams fill the connection; a third waits for one to end.
	ctx1, end1 := context.WithCancel(t.Context())
	defer end1()
	for i, ctx := range []context.Context{ctx1, t.Context()} {
		st, err := open(ctx, "multi-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	third := make(chan error, 1)
	go func() {
		st, err := open(t.Context(), "multi-2")
		if err == nil {
			_, err = st.Recv()
		}
		third <- err
	}()
	select {
	case err := <-third:
		t.Fatalf("a third stream on a connection allowing two was served (%v)", err)
	case <-time.After(200 * time.Millisecond):
		// Not served while two are open: the absence of an event can
		// only be observed for a while.
	}
	end1()
	select {
	case err := <-third:
		if err != nil {
			t.Errorf("the third stream, once a place was free: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the third stream was not served after another ended")
	}

	for _, path := range []string{"/metrics", "/healthz/ready", "/debug/configz", "/debug/pprof/"} {
		resp, err := http.Post("http://"+e.server.HTTPAddr().String()+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s = %d, Allow %q", path, resp.StatusCode, resp.Header.Get("Allow"))
		}
		if code, _ := e.get(path); code != http.StatusOK {
			t.Errorf("GET %s = %d", path, code)
		}
	}
}
