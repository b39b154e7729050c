package xds

import (
	"fmt"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/test/heap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// served returns the server's served figure of a type.
func (h *harness) served(typeURL string) limits.NameStat {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.served.Of(typeURL)
}

// madeUpNames returns n endpoint names the server does not serve.
func madeUpNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("outbound|80||made-up-%06d.example.com", i)
	}
	return out
}

// limitHits sums wayfinder_xds_limit_exceeded_total over its labels.
func limitHits(t *testing.T, h *harness) float64 {
	t.Helper()
	sum := 0.0
	for _, l := range limits.Labels {
		sum += h.metric("wayfinder_xds_limit_exceeded_total", "limit", l)
	}
	return sum
}

func wantExhausted(t *testing.T, h *harness, what string, err error, limit string, count float64) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), limit) {
		t.Errorf("%s: ended with %v, want ResourceExhausted naming %s", what, err, limit)
	}
	if got := h.metric("wayfinder_xds_limit_exceeded_total", "limit", limit); got != count {
		t.Errorf("wayfinder_xds_limit_exceeded_total{limit=%s} = %v, want %v", limit, got, count)
	}
}

// The long-name attack: one delta stream subscribing names of a megabyte
// grew the server by a megabyte a name while the stream stayed open. A
// name longer than the bound (or than any served name) ends the stream at
// once, and a stream of names within the bound ends once its
// subscription holds the byte bound; the heap does not keep it.
func TestDeltaNamesAreBoundedInLengthAndBytes(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	good := h.connectDelta(nodeID("good"), ingressLabels, nil)
	good.syncEnvoy([]string{"outbound|9080||reviews.default.svc.cluster.local"}, []string{"http.80"})
	before := heap.AfterGC()

	long := h.connectDelta(nodeID("long"), ingressLabels, nil)
	long.subscribe(resource.EndpointType, strings.Repeat("n", 1<<20), strings.Repeat("m", 1<<20))
	wantExhausted(t, h, "a delta stream naming 1 MiB names", long.streamError(), limits.LimitNameLength, 1)

	// Names of 1,000 bytes, 100 a request: the subscription reaches the
	// byte bound within a few requests, long before the count bound.
	many := h.connectDelta(nodeID("many"), ingressLabels, nil)
	bound := limits.Defaults.MaxSubscribedBytes + limits.ServedFactor*int(h.served(resource.EndpointType).Bytes)
	requests := 0
	for i := 0; ; i++ {
		names := make([]string, 100)
		for j := range names {
			names[j] = fmt.Sprintf("%06d-%06d-%s", i, j, strings.Repeat("x", 986))
		}
		many.subscribe(resource.EndpointType, names...)
		requests++
		if requests*100*(1000+limits.NameOverheadBytes) > bound {
			break
		}
	}
	wantExhausted(t, h, "a delta subscription past its byte bound", many.streamError(), limits.LimitSubscribedSize, 1)

	// A long initial resource version is refused too.
	versions := h.connectDelta(nodeID("versions"), ingressLabels, map[string]map[string]string{
		resource.EndpointType: {"outbound|9080||reviews.default.svc.cluster.local": strings.Repeat("v", 2<<10)}})
	versions.subscribe(resource.EndpointType, "outbound|9080||reviews.default.svc.cluster.local")
	wantExhausted(t, h, "a long initial version", versions.streamError(), limits.LimitNameLength, 2)

	after := heap.AfterGC()
	t.Logf("heap %d KiB before, %d KiB after the long-name streams closed", before>>10, after>>10)
	if after > before+8<<20 {
		t.Errorf("heap grew from %d to %d KiB", before>>10, after>>10)
	}
	good.barrier("outbound|9080||reviews.default.svc.cluster.local")
}

// A SotW request's name list is bounded in bytes as a delta one is; a
// version or nonce longer than a name may be ends the stream too.
func TestSotwRequestsAreBoundedInBytes(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	big := h.connect(nodeID("big"), ingressLabels)
	names := make([]string, 400) // 400 KiB of names of 1,000 bytes
	for i := range names {
		names[i] = fmt.Sprintf("%06d-%s", i, strings.Repeat("x", 993))
	}
	big.subscribe(resource.EndpointType, names...)
	wantExhausted(t, h, "a SotW request of 400 KiB of names", big.streamError(), limits.LimitRequestBytes, 1)

	v := h.connect(nodeID("version"), ingressLabels)
	v.send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, VersionInfo: strings.Repeat("v", 4<<10)})
	wantExhausted(t, h, "a 4 KiB version", v.streamError(), limits.LimitNameLength, 1)

	n := dial(t, h.addr, &core.Node{Id: nodeID("node"), Cluster: strings.Repeat("c", limits.MaxNodeBytes)})
	n.subscribe(resource.ClusterType)
	wantExhausted(t, h, "a node over the bound", n.streamError(), limits.LimitNodeSize, 1)
}

// The limits on names grow with what the server serves: with more
// services than the lowered flags allow, a gateway (SotW and delta) gets
// every cluster's endpoints and stays connected, while a stream naming
// as many names the server does not serve as the bound allows, plus one,
// is still closed.
func TestNameLimitsGrowWithWhatIsServed(t *testing.T) {
	for _, real := range []bool{false, true} {
		t.Run(fmt.Sprintf("core generator %v", real), func(t *testing.T) { testNameLimitsGrow(t, real) })
	}
}

func testNameLimitsGrow(t *testing.T, coreGenerator bool) {
	const services = 300
	h := newHarnessWith(t, newTestStore(bigConfig(services, "a.example.com")...), func(o *Options) {
		o.Limits.MaxResourceNamesPerRequest, o.Limits.MaxSubscribedNames, o.Limits.MaxSubscribedBytes = 100, 100, 4096
		if coreGenerator {
			o.Generator = nil // the real translation
		}
	})
	h.syncAndWait()

	sotw := h.connect(nodeID("sotw"), ingressLabels)
	got := sotw.syncAll()
	if n := len(got[resource.EndpointType].GetResources()); n <= services {
		t.Fatalf("SotW gateway got %d endpoint assignments, want more than %d", n, services)
	}
	delta := h.connectDelta(nodeID("delta"), ingressLabels, nil)
	eds := referenced(t, got[resource.ClusterType], resource.EndpointType)
	dgot := delta.syncEnvoy(eds, []string{"http.80"})
	if n := len(dgot[resource.EndpointType].GetResources()); n != len(eds) {
		t.Fatalf("delta gateway got %d endpoint assignments, want %d", n, len(eds))
	}
	// A delta gateway reconnecting with what it holds: initial versions and
	// subscriptions together name twice the served endpoints.
	initial := map[string]string{}
	for n, v := range delta.held[resource.EndpointType] {
		initial[n] = v
	}
	again := h.connectDelta(nodeID("again"), ingressLabels, map[string]map[string]string{resource.EndpointType: initial})
	again.subscribe(resource.ClusterType)
	again.ack(again.next(resource.ClusterType))
	again.subscribe(resource.EndpointType, eds...)
	again.ack(again.next(resource.EndpointType))

	served := h.served(resource.EndpointType)
	if served.Count < services {
		t.Fatalf("served endpoints %d, want at least %d", served.Count, services)
	}
	hostile := h.connect(nodeID("hostile"), ingressLabels)
	hostile.subscribe(resource.EndpointType, madeUpNames(100+limits.ServedFactor*served.Count+1)...)
	wantExhausted(t, h, "made-up names past the grown bound", hostile.streamError(), limits.LimitRequestNames, 1)

	// The gateways were never closed.
	sotw.barrier()
	delta.barrier(eds[0])
	again.barrier(eds[0])
	if got := limitHits(t, h); got != 1 {
		t.Errorf("limits hit %v times, want once (the hostile stream)", got)
	}
}

// A gateway reconnecting before the server's first push names everything
// it held; its requests wait for the push (which says what is served)
// rather than being measured against the flags alone.
func TestRequestsBeforeTheFirstPushWaitForIt(t *testing.T) {
	const services = 300
	h := newHarnessWith(t, newTestStore(bigConfig(services, "a.example.com")...), func(o *Options) {
		o.Limits.MaxResourceNamesPerRequest, o.Limits.MaxSubscribedNames = 100, 100
	})
	names := make([]string, 0, services)
	for i := range services {
		names = append(names, fmt.Sprintf("outbound|8080||svc-%04d.bulk.svc.cluster.local", i))
	}
	c := h.connectDelta(nodeID("early"), ingressLabels, nil)
	c.subscribe(resource.EndpointType, names...)
	h.syncAndWait()
	if n := len(c.next(resource.EndpointType).GetResources()); n != services {
		t.Errorf("got %d endpoint assignments, want %d", n, services)
	}
}

// Streams per ServiceAccount and per address are bounded: one more is
// refused with ResourceExhausted and counted, the others go on, and a
// stream that ends makes room.
func TestStreamsPerIdentityAndPeerAreBounded(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits.MaxStreamsPerIdentity, o.Limits.MaxStreamsPerPeer = 2, 3
	})
	h.syncAndWait()
	addr := identityServer(t, h)
	open := func(pod, sa string) *adsClient {
		t.Helper()
		var opts []grpc.DialOption
		if sa != "" {
			opts = append(opts, withIdentity("istio-system", sa))
		}
		return dial(t, addr, node(nodeID(pod), "istio-system"), opts...)
	}
	a1, a2 := open("a1", "gw"), open("a2", "gw")
	for _, c := range []*adsClient{a1, a2} {
		c.syncAll()
	}
	// Refused at admission: the client need not send anything.
	a3 := open("a3", "gw")
	wantExhausted(t, h, "a third stream of one ServiceAccount", a3.streamError(), limits.LimitPerIdentity, 1)

	b1 := open("b1", "other")
	b1.syncAll()
	b2 := open("b2", "")
	wantExhausted(t, h, "a fourth stream from one address", b2.streamError(), limits.LimitPerPeer, 1)

	// A stream that ends makes room for another.
	a2.close()
	poll.Until(t, "the closed stream released", func() bool { id, _ := h.s.limits.StreamCounts("istio-system", "gw", "127.0.0.1"); return id == 1 }, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
	a4 := open("a4", "gw")
	a4.syncAll()
	a1.barrier()
	b1.barrier()
}

// At most MaxQueuedStreams wait for admission; one more is refused with
// ResourceExhausted (counted) instead of adding to the admission debt.
func TestAdmissionQueueIsBounded(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) {
		o.Limits.StreamsPerSecond, o.Limits.StreamBurst, o.Limits.MaxQueuedStreams = 1, 1, 2
	})
	h.syncAndWait()
	first := h.connect(nodeID("first"), ingressLabels)
	first.syncAll()
	queued := []*adsClient{h.connect(nodeID("q1"), ingressLabels), h.connect(nodeID("q2"), ingressLabels)}
	for _, c := range queued {
		c.subscribe(resource.ClusterType)
	}
	poll.Until(t, "two streams waiting", func() bool {
		waiting, _ := h.s.limits.AdmissionQueue()
		return waiting == 2
	}, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
	over := h.connect(nodeID("over"), ingressLabels)
	wantExhausted(t, h, "a stream beyond the admission queue", over.streamError(), limits.LimitQueue, 1)
	_, debt := h.s.limits.AdmissionQueue()
	if debt > 2 {
		t.Errorf("admission owes %v tokens: in debt beyond the queue of 2", debt)
	}

	// The queued streams are admitted in turn, one a second: which of them
	// took the earlier token depends on which request the server read
	// first, so the test counts admissions rather than naming the stream.
	h.clock.Step(time.Second)
	poll.Until(t, "one queued stream admitted", func() bool {
		waiting, _ := h.s.limits.AdmissionQueue()
		return waiting == 1
	}, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
	h.clock.Step(time.Second)
	for _, c := range queued {
		c.syncFrom(c.next(resource.ClusterType))
	}
	first.barrier()
}

// One stream at every limit on names, on every type it may ask for,
// holds a bounded amount of the server's memory (the figure of
// docs/security/client-limits.md).
func TestHostileStreamAtItsLimitsHoldsBoundedMemory(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	before := heap.AfterGC()
	c := h.connectDelta(nodeID("hostile"), ingressLabels, nil)
	types := append([]string{}, snapshot.Types...)
	for i := len(types); i < limits.Defaults.MaxTypesPerStream; i++ {
		types = append(types, fmt.Sprintf("type.googleapis.com/made.up.T%d", i))
	}
	// Names of 1,000 bytes up to just under each type's byte bound, 50 a
	// request within the request rate's burst.
	sent := 0
	for _, typ := range types {
		bound := int64(limits.Defaults.MaxSubscribedBytes) + limits.ServedFactor*h.served(typ).Bytes
		n := int(bound/(1000+limits.NameOverheadBytes)) - 1 // room for the barrier's name
		for i := 0; i < n; i += 50 {
			names := make([]string, 0, 50)
			for j := i; j < min(i+50, n); j++ {
				names = append(names, fmt.Sprintf("%s-%06d-%s", snapshot.ShortType(typ)[len(snapshot.ShortType(typ))-3:], j, strings.Repeat("x", 989)))
			}
			c.subscribe(typ, names...)
			sent++
		}
		c.next(typ) // the first request of a type is answered, if only empty
	}
	c.barrier("outbound|9080||reviews.default.svc.cluster.local")
	if sent > limits.Defaults.RequestBurst {
		t.Fatalf("%d requests: over the request burst, the test measures the wrong limit", sent)
	}
	during := heap.AfterGC()
	t.Logf("heap %d KiB before, %d KiB with one delta stream at its limits on %d types (%d requests)", before>>10, during>>10, len(types), sent)
	if during > before+16<<20 {
		t.Errorf("one stream at its limits holds %d KiB", (during-before)>>10)
	}
	if got := limitHits(t, h); got != 0 {
		t.Errorf("limits hit %v times below the limits", got)
	}
}
