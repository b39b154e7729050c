package xds

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/wire"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/test/heap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
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

// A write in flight when the server stops (here one blocked on a client
// that does not read) ends its stream as cleanly as the stream loop ends
// an idle one: the client reads what was sent, then the end of the stream.
func TestStopEndsAStreamWithAWriteInFlightCleanly(t *testing.T) {
	h := newHarnessWith(t, newTestStore(bigConfig(3000, "a.example.com")...), func(o *Options) {
		o.Limits.SendTimeout = time.Hour
	})
	h.syncAndWait()
	c := openStuck(t, h.addr, nodeID("stuck"), resource.ClusterType, resource.ListenerType)
	poll.Until(t, "the stuck stream blocked in a write", func() bool { return h.s.limits.Sending() >= 1 }, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
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

	base := heap.AfterGC()
	clients := make([]*stuckClient, stuck)
	for i := range clients {
		clients[i] = openStuck(t, h.addr, nodeID(fmt.Sprintf("stuck-%d", i)), resource.ClusterType, resource.ListenerType)
	}
	poll.Until(t, "every stuck stream blocked in a write", func() bool { return h.s.limits.Sending() >= stuck }, poll.Timeout(wait), poll.Interval(5*time.Millisecond))

	// An edit reaches the good gateway while every stuck stream is blocked.
	start := time.Now()
	h.update("edit", bigConfig(3000, "b.example.com")...)
	resp := good.next(resource.RouteType)
	t.Logf("push reached the good gateway in %v with %d streams blocked", time.Since(start), h.s.limits.Sending())
	good.ack(resp)
	if got := h.metric("pilot_xds_write_timeout"); got != 0 {
		t.Fatalf("%v streams timed out before the deadline", got)
	}

	// At the deadline every stuck stream is closed and counted.
	h.clock.Step(10 * time.Second)
	poll.Until(t, "stuck streams closed", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return len(h.s.streams) == 1
	}, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
	if got := h.metric("pilot_xds_write_timeout"); got != stuck {
		t.Errorf("pilot_xds_write_timeout = %v, want %d", got, stuck)
	}
	if got := h.s.limits.Sending(); got != 0 {
		t.Errorf("%d writes still waiting after their streams closed", got)
	}
	// The good gateway is still served.
	good.barrier()

	for _, c := range clients {
		c.close()
	}
	after := heap.AfterGC()
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
	hugeID := huge[:limits.MaxNodeBytes/2] // a node within the node size bound
	for range 3 * limits.PeerLogBurst {
		c := dial(t, h.addr, &core.Node{Id: "bad-" + hugeID})
		c.subscribe(resource.ClusterType)
		err := c.streamError()
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("invalid node: %.300v", err)
		}
		if len(status.Convert(err).Message()) > 4*limits.MaxLoggedBytes {
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
	if n := strings.Count(out, "invalid node"); n != limits.PeerLogBurst {
		t.Errorf("%d lines about the invalid node from one peer, want %d", n, limits.PeerLogBurst)
	}
	if !strings.Contains(out, "bytes)") || !strings.Contains(out, "proxy rejected config (NACK)") {
		t.Errorf("clipped NACK not logged:\n%.2000s", out)
	}
	if got := h.metric("wayfinder_log_lines_suppressed_total"); got != 2*limits.PeerLogBurst {
		t.Errorf("wayfinder_log_lines_suppressed_total = %v, want %d", got, 2*limits.PeerLogBurst)
	}
	sz := syncOf(t, h, nodeID("a"), "rds")
	if sz.LastNack == nil || len(sz.LastNack.Message) > limits.MaxKeptNackBytes+64 {
		t.Errorf("syncz keeps the NACK message unbounded or not at all: %+v", sz.LastNack)
	}
}

// Each limit on requests ends the stream with ResourceExhausted, counted
// under its own label; other streams go on.
func TestRequestLimitsCloseTheStream(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits = limits.Options{RequestsPerSecond: 1, RequestBurst: 12, MaxResourceNamesPerRequest: 10, MaxTypesPerStream: 6, MaxSubscribedNames: 12}
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
	expect(a, limits.LimitRequestRate, 1)

	// Names in one request: the bound is the flag plus twice what is
	// served of the type.
	b := h.connect(nodeID("b"), ingressLabels)
	b.subscribe(resource.EndpointType, madeUpNames(10+2*h.served(resource.EndpointType).Count+1)...)
	expect(b, limits.LimitRequestNames, 1)

	// Distinct types on one stream.
	c := h.connect(nodeID("c"), ingressLabels)
	for i := range 7 {
		c.send(&discovery.DiscoveryRequest{TypeUrl: fmt.Sprintf("type.googleapis.com/made.up.T%d", i)})
	}
	expect(c, limits.LimitTypesPerStream, 1)

	// A delta subscription growing past the bound, ten names at a time.
	d := h.connectDelta(nodeID("d"), ingressLabels, nil)
	names := madeUpNames(12 + 2*h.served(resource.EndpointType).Count + 1)
	for len(names) > 0 {
		n := min(10, len(names))
		d.subscribe(resource.EndpointType, names[:n]...)
		names = names[n:]
	}
	expect(d, limits.LimitSubscribed, 1)

	// A type URL longer than anything Envoy sends.
	e := h.connect(nodeID("e"), ingressLabels)
	e.send(&discovery.DiscoveryRequest{TypeUrl: strings.Repeat("t", limits.MaxTypeURLBytes+1)})
	expect(e, limits.LimitTypeURL, 1)

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
	poll.Until(t, "the second stream to wait for admission", h.clock.HasWaiters, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
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

	// A client that gives up while queued leaves without a token: see
	// limits.TestAdmissionOfAGoneClientReturnsItsToken.
}

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

// A stream sending long made-up name lists leaves at most the shared name
// lists' byte bound behind once it has closed.
func TestLongNameListsAreReleasedWhenTheStreamCloses(t *testing.T) {
	// The limits on subscriptions would close the stream first.
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits.MaxSubscribedBytes, o.Limits.MaxSubscribedNames = -1, -1
	})
	h.syncAndWait()
	before := heap.AfterGC()
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
	poll.Until(t, "the stream to close", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return len(h.s.streams) == 0
	}, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
	after := heap.AfterGC()
	t.Logf("heap %d MiB before, %d MiB after a stream sent 60 name lists of 1.5 MB and closed (shared lists hold %d KiB)",
		before>>20, after>>20, wire.SharedNamesBytes()>>10)
	if bound := before + uint64(limits.Defaults.SharedNamesBytes) + 16<<20; after > bound {
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
