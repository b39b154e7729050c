package xds

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// bigConfig is base plus n services: a CDS response of about 100 bytes a
// cluster, large enough (at n in the thousands) to fill a stream's flow
// control window many times over.
func bigConfig(n int, extraHost string) []config.Config {
	cs := withRoute("reviews.example.com", extraHost)
	for i := range n {
		host := fmt.Sprintf("svc-%04d.bulk.svc.cluster.local", i)
		cs = append(cs, serviceEntry("bulk", fmt.Sprintf("svc-%04d", i), host, 8080, "10.9.0.1"))
	}
	return cs
}

// stuckClient is a client that asks and never reads: its windows are
// gRPC's smallest defaults (64 KiB, no growth), so the server's writes to
// it block once a response or two are on their way.
type stuckClient struct {
	conn   *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
}

func openStuck(t testing.TB, addr, id string, typeURLs ...string) *stuckClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}})
	for i, typ := range typeURLs {
		req := &discovery.DiscoveryRequest{TypeUrl: typ}
		if i == 0 {
			req.Node = &core.Node{Id: id, Metadata: meta}
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	c := &stuckClient{conn: conn, stream: stream, cancel: cancel}
	t.Cleanup(c.close)
	return c
}

func (c *stuckClient) close() {
	c.cancel()
	_ = c.conn.Close()
}

// waitUntil polls cond (for server-side state no event announces) with a
// bounded deadline.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A write in flight when the server stops (here one blocked on a client
// that does not read) ends its stream as cleanly as the stream loop ends
// an idle one: the client reads what was sent, then the end of the stream.
func TestStopEndsAStreamWithAWriteInFlightCleanly(t *testing.T) {
	h := newHarnessWith(t, newTestStore(bigConfig(3000, "a.example.com")...), func(o *Options) {
		o.Limits.SendTimeout = time.Hour
	})
	h.syncAndWait()
	c := openStuck(t, h.addr, nodeID("stuck"), resource.ClusterType, resource.ListenerType)
	waitUntil(t, "the stuck stream blocked in a write", func() bool { return h.s.sending.Load() >= 1 })
	h.cancel()
	for {
		if _, err := c.stream.Recv(); err != nil {
			if err != io.EOF {
				t.Errorf("stream ended with %v, want a clean end (EOF)", err)
			}
			break
		}
	}
}

func heapAfterGC() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Streams that stop reading never delay another stream's push (more of
// them than the send slots the server used to share), and once their send
// deadline passes they are closed, counted, and their memory is freed.
// The clock is fake: the stuck streams wait for as long as the test wants.
func TestStuckStreamsDoNotDelayOthersAndAreClosedAtTheDeadline(t *testing.T) {
	const stuck = 150
	h := newHarnessWith(t, newTestStore(bigConfig(3000, "a.example.com")...), func(o *Options) {
		o.Limits.SendTimeout = 10 * time.Second
	})
	h.syncAndWait()
	good := h.connect(nodeID("good"), ingressLabels)
	good.syncAll()

	base := heapAfterGC()
	clients := make([]*stuckClient, stuck)
	for i := range clients {
		clients[i] = openStuck(t, h.addr, nodeID(fmt.Sprintf("stuck-%d", i)), resource.ClusterType, resource.ListenerType)
	}
	waitUntil(t, "every stuck stream blocked in a write", func() bool { return h.s.sending.Load() >= stuck })

	// An edit reaches the good gateway while every stuck stream is blocked.
	start := time.Now()
	h.update("edit", bigConfig(3000, "b.example.com")...)
	resp := good.next(resource.RouteType)
	t.Logf("push reached the good gateway in %v with %d streams blocked", time.Since(start), h.s.sending.Load())
	good.ack(resp)
	if got := h.metric("pilot_xds_write_timeout"); got != 0 {
		t.Fatalf("%v streams timed out before the deadline", got)
	}

	// At the deadline every stuck stream is closed and counted.
	h.clock.Step(10 * time.Second)
	waitUntil(t, "stuck streams closed", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return len(h.s.streams) == 1
	})
	if got := h.metric("pilot_xds_write_timeout"); got != stuck {
		t.Errorf("pilot_xds_write_timeout = %v, want %d", got, stuck)
	}
	if got := h.s.sending.Load(); got != 0 {
		t.Errorf("%d writes still waiting after their streams closed", got)
	}
	// The good gateway is still served.
	good.barrier()

	for _, c := range clients {
		c.close()
	}
	after := heapAfterGC()
	t.Logf("heap: %d KiB before the stuck streams, %d KiB after they closed", base>>10, after>>10)
	if after > base+32<<20 {
		t.Errorf("heap grew from %d to %d KiB after the stuck streams closed", base>>10, after>>10)
	}
}

// Made-up type URLs are answered (empty) but share one metric label value.
func TestMadeUpTypeURLsShareOneMetricLabel(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) { o.Limits.MaxTypesPerStream = -1 })
	h.syncAndWait()
	c := h.connect(nodeID("a"), ingressLabels)
	c.syncAll()
	for i := range 50 {
		typ := fmt.Sprintf("type.googleapis.com/made.up.Type%d", i)
		c.subscribe(typ)
		c.ack(c.next(typ))
	}
	mfs, err := h.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"cds": true, "eds": true, "lds": true, "rds": true, "sds": true, "other": true}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "type" && strings.HasPrefix(mf.GetName(), "pilot_xds") && !allowed[lp.GetValue()] {
					t.Errorf("%s has label type=%q", mf.GetName(), lp.GetValue())
				}
			}
		}
	}
	if got := h.metric("pilot_xds_pushes", "type", "other"); got != 50 {
		t.Errorf("pilot_xds_pushes{type=other} = %v, want 50", got)
	}
}

// lockedBuffer collects log output from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A megabyte node id or NACK message is logged clipped, and the same line
// from the same peer is logged a bounded number of times.
func TestClientStringsAreClippedAndRepeatedLinesLimited(t *testing.T) {
	var logs lockedBuffer
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	h.syncAndWait()

	huge := strings.Repeat("x", 1<<20)
	hugeID := huge[:maxNodeBytes/2] // a node within the node size bound
	for range 3 * peerLogBurst {
		c := dial(t, h.addr, &core.Node{Id: "bad-" + hugeID})
		c.subscribe(resource.ClusterType)
		err := c.streamError()
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("invalid node: %.300v", err)
		}
		if len(status.Convert(err).Message()) > 4*maxLoggedBytes {
			t.Fatal("the error sent back holds the whole node id")
		}
		c.close()
	}

	a := h.connect(nodeID("a"), ingressLabels)
	a.syncAll()
	h.update("edit", withRoute("other.example.com")...)
	a.nack(a.next(resource.RouteType), "bad route: "+huge)
	a.barrier()

	out := logs.String()
	for line := range strings.Lines(out) {
		if len(line) > 4096 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	if n := strings.Count(out, "invalid node"); n != peerLogBurst {
		t.Errorf("%d lines about the invalid node from one peer, want %d", n, peerLogBurst)
	}
	if !strings.Contains(out, "bytes)") || !strings.Contains(out, "proxy rejected config (NACK)") {
		t.Errorf("clipped NACK not logged:\n%.2000s", out)
	}
	if got := h.metric("wayfinder_log_lines_suppressed_total"); got != 2*peerLogBurst {
		t.Errorf("wayfinder_log_lines_suppressed_total = %v, want %d", got, 2*peerLogBurst)
	}
	sz := syncOf(t, h, nodeID("a"), "rds")
	if sz.LastNack == nil || len(sz.LastNack.Message) > maxKeptNackBytes+64 {
		t.Errorf("syncz keeps the NACK message unbounded or not at all: %+v", sz.LastNack)
	}
}

// Each limit on requests ends the stream with ResourceExhausted, counted
// under its own label; other streams go on.
func TestRequestLimitsCloseTheStream(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits = Limits{RequestsPerSecond: 1, RequestBurst: 12, MaxResourceNamesPerRequest: 10, MaxTypesPerStream: 6, MaxSubscribedNames: 12}
	})
	h.syncAndWait()
	other := h.connect(nodeID("other"), ingressLabels)
	other.syncAll()
	expect := func(c interface{ streamError() error }, limit string, want float64) {
		t.Helper()
		if err := c.streamError(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), limit) {
			t.Errorf("stream over %s ended with %v, want ResourceExhausted", limit, err)
		}
		if got := h.metric("wayfinder_xds_limit_exceeded_total", "limit", limit); got != want {
			t.Errorf("wayfinder_xds_limit_exceeded_total{limit=%s} = %v, want %v", limit, got, want)
		}
	}

	// Request rate: the clock does not move, so the burst is all it gets.
	a := h.connect(nodeID("a"), ingressLabels)
	for range 13 {
		a.send(&discovery.DiscoveryRequest{TypeUrl: resource.ListenerType})
	}
	expect(a, limitRequestRate, 1)

	// Names in one request: the bound is the flag plus twice what is
	// served of the type.
	b := h.connect(nodeID("b"), ingressLabels)
	b.subscribe(resource.EndpointType, madeUpNames(10+2*h.served(resource.EndpointType).count+1)...)
	expect(b, limitRequestNames, 1)

	// Distinct types on one stream.
	c := h.connect(nodeID("c"), ingressLabels)
	for i := range 7 {
		c.send(&discovery.DiscoveryRequest{TypeUrl: fmt.Sprintf("type.googleapis.com/made.up.T%d", i)})
	}
	expect(c, limitTypesPerStream, 1)

	// A delta subscription growing past the bound, ten names at a time.
	d := h.connectDelta(nodeID("d"), ingressLabels, nil)
	names := madeUpNames(12 + 2*h.served(resource.EndpointType).count + 1)
	for len(names) > 0 {
		n := min(10, len(names))
		d.subscribe(resource.EndpointType, names[:n]...)
		names = names[n:]
	}
	expect(d, limitSubscribed, 1)

	// A type URL longer than anything Envoy sends.
	e := h.connect(nodeID("e"), ingressLabels)
	e.send(&discovery.DiscoveryRequest{TypeUrl: strings.Repeat("t", maxTypeURLBytes+1)})
	expect(e, limitTypeURL, 1)

	other.barrier()
}

// New streams beyond the admission rate wait for their turn; none is
// refused, and one whose client gives up while waiting returns its turn.
func TestStreamAdmissionQueuesRatherThanRejects(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits.StreamsPerSecond, o.Limits.StreamBurst = 1, 1
	})
	h.syncAndWait()
	first := h.connect(nodeID("first"), ingressLabels)
	first.syncAll()

	// The second stream waits: its request is not answered while the
	// clock stands still.
	second := h.connect(nodeID("second"), ingressLabels)
	second.subscribe(resource.ClusterType)
	waitUntil(t, "the second stream to wait for admission", h.clock.HasWaiters)
	select {
	case resp := <-second.recv:
		t.Fatalf("a stream over the admission rate was answered at once: %v", resp)
	default:
	}
	h.clock.Step(time.Second)
	second.syncFrom(second.next(resource.ClusterType))
	if got := h.metric("wayfinder_xds_stream_admission_wait_seconds"); got != 2 {
		t.Errorf("admission histogram has %v samples, want 2", got)
	}

	// A client that gives up while queued leaves without a token.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.s.admission.wait(ctx, context.Background()); status.Code(err) != codes.Canceled {
		t.Errorf("admission with a cancelled client: %v", err)
	}
}

func TestPeerLogIsBoundedPerPeerAndInMemory(t *testing.T) {
	clk := &fakePassive{now: t0}
	p := newPeerLog(clk)
	logged := 0
	for range 100 {
		if _, ok := p.allow("10.0.0.1:1234", "m"); ok {
			logged++
		}
	}
	if logged != peerLogBurst {
		t.Errorf("%d of 100 repeated lines logged, want %d", logged, peerLogBurst)
	}
	// Another port of the same host is the same peer; another host is not.
	if _, ok := p.allow("10.0.0.1:999", "m"); ok {
		t.Error("same host, new port: not limited")
	}
	if _, ok := p.allow("10.0.0.2:1", "m"); !ok {
		t.Error("another host was limited")
	}
	clk.now = clk.now.Add(peerLogEvery)
	if n, ok := p.allow("10.0.0.1:1", "m"); !ok || n != 100-peerLogBurst+1 {
		t.Errorf("after a while: logged %v, suppressed %d, want %d", ok, n, 100-peerLogBurst+1)
	}
	for i := range 3 * peerLogKeys {
		p.allow(fmt.Sprintf("10.1.%d.%d:1", i/256, i%256), "m")
	}
	if len(p.m) > peerLogKeys+1 {
		t.Errorf("%d keys tracked, bound %d", len(p.m), peerLogKeys)
	}
}

type fakePassive struct{ now time.Time }

func (f *fakePassive) Now() time.Time                  { return f.now }
func (f *fakePassive) Since(t time.Time) time.Duration { return f.now.Sub(t) }

func TestClip(t *testing.T) {
	if got := clip("short"); got != "short" {
		t.Errorf("clip(short) = %q", got)
	}
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := clip(long)
	if !strings.HasSuffix(got, "...(2000 bytes)") || len(got) > maxLoggedBytes+20 || !utf8Valid(got) {
		t.Errorf("clip(long) = %q", got)
	}
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// streamError waits for the delta stream to end and returns its error.
func (c *deltaClient) streamError() error {
	c.t.Helper()
	for {
		select {
		case _, ok := <-c.recv:
			if !ok {
				return <-c.err
			}
		case <-time.After(wait):
			c.t.Fatal("stream did not end")
		}
	}
}

// Debug endpoints, metrics and readiness answer GET and HEAD only.
func TestDebugEndpointsAnswerOnlyGetAndHead(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	for _, ep := range append(h.s.debugEndpoints(), debugEndpoint{path: "/debug/pprof/symbol"}) {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, "TRACE"} {
			req, err := http.NewRequest(method, h.http.URL+ep.path, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s = %d, Allow %q; want 405, GET, HEAD", method, ep.path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		resp, err := http.Head(h.http.URL + ep.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s refused", ep.path)
		}
	}
	if code, _ := h.get("/metrics"); code != http.StatusOK {
		t.Errorf("GET /metrics = %d", code)
	}
}

// A stream sending long made-up name lists leaves at most the shared name
// lists' byte bound behind once it has closed.
func TestLongNameListsAreReleasedWhenTheStreamCloses(t *testing.T) {
	// The limits on subscriptions would close the stream first.
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits.MaxSubscribedBytes, o.Limits.MaxSubscribedNames = -1, -1
	})
	h.syncAndWait()
	before := heapAfterGC()
	c := h.connect(nodeID("lists"), ingressLabels)
	c.syncAll()
	for l := range 60 {
		names := make([]string, 30000) // about 1.5 MB a request
		for i := range names {
			names[i] = fmt.Sprintf("outbound|8080||made-up-%02d-%06d.example.svc.cluster.local", l, i)
		}
		c.subscribe(resource.EndpointType, names...)
		c.ack(c.next(resource.EndpointType))
	}
	c.close()
	waitUntil(t, "the stream to close", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return len(h.s.streams) == 0
	})
	after := heapAfterGC()
	t.Logf("heap %d MiB before, %d MiB after a stream sent 60 name lists of 1.5 MB and closed (shared lists hold %d KiB)",
		before>>20, after>>20, wire.SharedNamesBytes()>>10)
	if bound := before + uint64(DefaultLimits.SharedNamesBytes) + 16<<20; after > bound {
		t.Errorf("heap %d MiB after the stream closed, over %d MiB", after>>20, bound>>20)
	}
}

// ACKs are logged at debug level only (the line is built only then).
func TestACKsAreLoggedAtDebugLevelOnly(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs lockedBuffer
		h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
		})
		h.syncAndWait()
		a := h.connect(nodeID("a"), ingressLabels)
		a.syncAll()
		a.barrier()
		got := strings.Count(logs.String(), "msg=ACK ")
		if level == slog.LevelDebug && got == 0 {
			t.Errorf("no ACK line at debug level:\n%.2000s", logs.String())
		}
		if level == slog.LevelInfo && got != 0 {
			t.Errorf("%d ACK lines at info level", got)
		}
	}
}
