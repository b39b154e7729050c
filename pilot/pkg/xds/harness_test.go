package xds

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait on an event, so a bug fails the test instead of
// hanging it. Nothing waits for this long when the code works.
const wait = 20 * time.Second

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// harness is a DiscoveryServer behind a real gRPC server on loopback.
type harness struct {
	t        *testing.T
	s        *DiscoveryServer
	store    *testStore
	gen      *fakeGenerator
	clock    *clocktesting.FakeClock
	registry *prometheus.Registry
	addr     string
	grpc     *grpc.Server
	http     *httptest.Server
	cancel   context.CancelFunc
	done     sync.WaitGroup
}

func newHarness(t *testing.T, store *testStore) *harness {
	t.Helper()
	return newHarnessWith(t, store, nil)
}

// newHarnessWith is newHarness with the server's options changed by edit.
func newHarnessWith(t *testing.T, store *testStore, edit func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, store: store, gen: &fakeGenerator{}, clock: clocktesting.NewFakeClock(t0), registry: prometheus.NewRegistry()}
	opts := Options{
		Store:     store,
		Errors:    store,
		Generator: h.gen,
		// The debouncer runs on real time with a short quiet period: tests
		// wait for the pushes' effects, never for time.
		Debounce: debounce.Options{QuietPeriod: time.Millisecond, MaxDelay: 10 * time.Millisecond, Clock: clock.RealClock{}},
		Logger:   testLogger(t),
		Registry: h.registry,
		Clock:    h.clock,
	}
	if edit != nil {
		edit(&opts)
	}
	h.s = NewDiscoveryServer(opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = lis.Addr().String()
	// WaitForHandlers: Stop returns only after every stream handler (and so
	// OnStreamClosed and its logging) has finished.
	h.grpc = grpc.NewServer(grpc.WaitForHandlers(true), grpc.StreamInterceptor(testIdentityInterceptor))
	h.s.Register(h.grpc)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done.Go(func() { _ = h.grpc.Serve(lis) })
	h.done.Go(func() { h.s.Run(ctx) })
	h.http = httptest.NewServer(debug.NewMux(debug.Options{State: h.s}))
	t.Cleanup(h.stop)
	return h
}

// stop ends Run (which ends every stream) and the servers, and waits.
func (h *harness) stop() {
	h.cancel()
	h.grpc.Stop()
	h.http.Close()
	h.done.Wait()
}

// syncAndWait marks the store synced and waits for the first push.
func (h *harness) syncAndWait() {
	h.t.Helper()
	h.s.Synced()
	select {
	case <-h.s.FirstPushDone():
	case <-time.After(wait):
		h.t.Fatal("first push did not happen")
	}
}

// update replaces the store content and asks for a push, as a config
// event handler would.
func (h *harness) update(reason string, cs ...config.Config) {
	h.store.set(cs...)
	h.s.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{reason: 1}, Start: h.clock.Now()})
}

// snapshot returns the view a connected proxy is served (shared by every
// proxy of its group).
func (h *harness) snapshot(id string) *snapshot.View {
	h.t.Helper()
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	p := h.s.proxies[id]
	if p == nil || p.view == nil {
		h.t.Fatalf("no view for %s", id)
	}
	return p.view
}

// counter reads a counter or gauge with the given labels from the registry.
func (h *harness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.registry.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, labels) {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

func (h *harness) histogram(name string) *dto.Histogram {
	h.t.Helper()
	mfs, err := h.registry.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	return &dto.Histogram{}
}

func labelsMatch(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == kv[i] && lp.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (h *harness) get(path string) (int, []byte) {
	h.t.Helper()
	resp, err := http.Get(h.http.URL + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// nodeID builds an Istio router node id.
func nodeID(pod string) string {
	return "router~10.0.0.1~" + pod + ".istio-system~istio-system.svc.cluster.local"
}

// adsClient is a minimal ADS client that lets a test choose every
// request: version, nonce, resource names, error detail.
type adsClient struct {
	t      *testing.T
	node   *core.Node
	conn   *grpc.ClientConn
	stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
	recv   chan *discovery.DiscoveryResponse
	// err receives the stream's terminal error.
	err  chan error
	done sync.WaitGroup
	sent bool

	// per type: last version accepted, last nonce seen, names subscribed.
	version map[string]string
	nonce   map[string]string
	names   map[string][]string
}

func (h *harness) connect(id string, labels map[string]string, opts ...grpc.DialOption) *adsClient {
	h.t.Helper()
	md := map[string]any{"NAMESPACE": "istio-system", "CLUSTER_ID": "Kubernetes"}
	if labels != nil {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		md["LABELS"] = l
	}
	meta, err := structpb.NewStruct(md)
	if err != nil {
		h.t.Fatal(err)
	}
	return dial(h.t, h.addr, &core.Node{Id: id, Metadata: meta}, opts...)
}

func dial(t *testing.T, addr string, node *core.Node, opts ...grpc.DialOption) *adsClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &adsClient{t: t, node: node, conn: conn, stream: stream, cancel: cancel,
		recv: make(chan *discovery.DiscoveryResponse, 64), err: make(chan error, 1),
		version: map[string]string{}, nonce: map[string]string{}, names: map[string][]string{}}
	c.done.Go(func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.err <- err
				close(c.recv)
				return
			}
			c.recv <- resp
		}
	})
	t.Cleanup(c.close)
	return c
}

func (c *adsClient) close() {
	c.cancel()
	c.done.Wait()
	_ = c.conn.Close()
}

func (c *adsClient) send(req *discovery.DiscoveryRequest) {
	c.t.Helper()
	if !c.sent {
		req.Node = c.node // Envoy sends the node on the first request only
		c.sent = true
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send %s: %v", req.GetTypeUrl(), err)
	}
}

// subscribe asks for typeURL with names, at the version and nonce held.
func (c *adsClient) subscribe(typeURL string, names ...string) {
	c.t.Helper()
	c.names[typeURL] = names
	c.send(&discovery.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names,
		VersionInfo: c.version[typeURL], ResponseNonce: c.nonce[typeURL]})
}

// ack accepts resp.
func (c *adsClient) ack(resp *discovery.DiscoveryResponse) {
	c.t.Helper()
	t := resp.GetTypeUrl()
	c.version[t], c.nonce[t] = resp.GetVersionInfo(), resp.GetNonce()
	c.send(&discovery.DiscoveryRequest{TypeUrl: t, ResourceNames: c.names[t], VersionInfo: c.version[t], ResponseNonce: c.nonce[t]})
}

// nack rejects resp, keeping the version accepted before, as Envoy does.
func (c *adsClient) nack(resp *discovery.DiscoveryResponse, msg string) {
	c.t.Helper()
	t := resp.GetTypeUrl()
	c.nonce[t] = resp.GetNonce()
	c.send(&discovery.DiscoveryRequest{TypeUrl: t, ResourceNames: c.names[t], VersionInfo: c.version[t],
		ResponseNonce: c.nonce[t], ErrorDetail: &status.Status{Code: 3, Message: msg}})
}

// next returns the next response, which must be of typeURL.
func (c *adsClient) next(typeURL string) *discovery.DiscoveryResponse {
	c.t.Helper()
	select {
	case resp, ok := <-c.recv:
		if !ok {
			c.t.Fatalf("stream ended waiting for %s: %v", snapshot.ShortType(typeURL), <-c.err)
		}
		if resp.GetTypeUrl() != typeURL {
			c.t.Fatalf("got %s version %s, want %s", snapshot.ShortType(resp.GetTypeUrl()), resp.GetVersionInfo(), snapshot.ShortType(typeURL))
		}
		return resp
	case <-time.After(wait):
		c.t.Fatalf("no %s response", snapshot.ShortType(typeURL))
	}
	return nil
}

// streamError waits for the stream to end and returns its error.
func (c *adsClient) streamError() error {
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

// syncAll does what Envoy does on connect: CDS, then EDS for the EDS
// clusters, LDS, then RDS for the listeners' routes; every response is
// ACKed. It returns the responses by type.
func (c *adsClient) syncAll() map[string]*discovery.DiscoveryResponse {
	c.t.Helper()
	c.subscribe(resource.ClusterType)
	return c.syncFrom(c.next(resource.ClusterType))
}

// syncFrom continues syncAll from the first CDS response.
func (c *adsClient) syncFrom(cds *discovery.DiscoveryResponse) map[string]*discovery.DiscoveryResponse {
	c.t.Helper()
	got := map[string]*discovery.DiscoveryResponse{resource.ClusterType: cds}
	c.ack(cds)
	if names := referenced(c.t, cds, resource.EndpointType); len(names) > 0 {
		c.subscribe(resource.EndpointType, names...)
		eds := c.next(resource.EndpointType)
		got[resource.EndpointType] = eds
		c.ack(eds)
	}
	c.subscribe(resource.ListenerType)
	lds := c.next(resource.ListenerType)
	got[resource.ListenerType] = lds
	c.ack(lds)
	if names := referenced(c.t, lds, resource.RouteType); len(names) > 0 {
		c.subscribe(resource.RouteType, names...)
		rds := c.next(resource.RouteType)
		got[resource.RouteType] = rds
		c.ack(rds)
	}
	return got
}

// barrier proves the server has processed every request sent so far: it
// re-asks for CDS as if it had nothing, and the CDS answer can only come
// after the server handled the earlier requests on this stream (and after
// any answer they caused, which next would report as unexpected).
func (c *adsClient) barrier() {
	c.t.Helper()
	c.send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNames: c.names[resource.ClusterType],
		ResponseNonce: c.nonce[resource.ClusterType]})
	c.ack(c.next(resource.ClusterType))
}

// referenced returns the names resp's resources refer to in refType.
func referenced(t *testing.T, resp *discovery.DiscoveryResponse, refType string) []string {
	t.Helper()
	items := map[string]types.ResourceWithTTL{}
	for _, a := range resp.GetResources() {
		var m types.Resource
		switch resp.GetTypeUrl() {
		case resource.ClusterType:
			m = &cluster.Cluster{}
		case resource.ListenerType:
			m = &listener.Listener{}
		default:
			t.Fatalf("no references in %s", resp.GetTypeUrl())
		}
		if err := a.UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		items[cache.GetResourceName(m)] = types.ResourceWithTTL{Resource: m}
	}
	var out []string
	for n := range cache.GetResourceReferences(items)[refType] {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// resourceNames lists the names in a response, sorted.
func resourceNames(t *testing.T, resp *discovery.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range resp.GetResources() {
		m, err := a.UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cache.GetResourceName(m.(types.Resource)))
	}
	slices.Sort(out)
	return out
}

// testLogger writes to the test log at debug level when -v is given.
func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
