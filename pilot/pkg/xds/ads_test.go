package xds

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

var (
	ingressLabels  = map[string]string{"istio": "ingressgateway"}
	internalLabels = map[string]string{"istio": "internal"}
	edgeLabels     = map[string]string{"istio": "ingressgateway", "tier": "edge"}
)

// base is the config most tests start from: two Gateways for two sets of
// proxies, a third that adds a port for "edge" proxies, one route, one
// service.
func base() []config.Config {
	return []config.Config{
		gateway("istio-system", "public", ingressLabels, 80, "*"),
		gateway("istio-system", "internal", internalLabels, 8080, "*"),
		gateway("istio-system", "edge", map[string]string{"tier": "edge"}, 9090, "*"),
		virtualService("default", "reviews", []string{"istio-system/public"}, []string{"reviews.example.com"}, "reviews.default.svc.cluster.local", 9080),
		serviceEntry("default", "reviews", "reviews.default.svc.cluster.local", 9080, "10.1.0.1"),
	}
}

// withRoute returns base with the reviews VirtualService pointing at host.
func withRoute(hosts ...string) []config.Config {
	cs := base()
	cs[3] = virtualService("default", "reviews", []string{"istio-system/public"}, hosts, "reviews.default.svc.cluster.local", 9080)
	return cs
}

func TestProxiesWithTheSameGatewaysShareOneSnapshotAndOneTranslation(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	b := h.connect(nodeID("b"), ingressLabels)
	c := h.connect(nodeID("c"), internalLabels)
	ra, rb, rc := a.syncAll(), b.syncAll(), c.syncAll()

	if got := h.gen.services.Load(); got != 1 {
		t.Errorf("BuildServices ran %d times for one push, want 1", got)
	}
	if got := h.gen.gateways.Load(); got != 2 {
		t.Errorf("BuildGateway ran %d times for two distinct gateway sets, want 2", got)
	}
	groups := h.gen.translatedGroups()
	slices.Sort(groups)
	if len(slices.Compact(groups)) != 2 {
		t.Errorf("translated groups %v: want each of the 2 groups once", h.gen.translatedGroups())
	}
	if h.snapshot(nodeID("a")) != h.snapshot(nodeID("b")) {
		t.Error("proxies a and b have the same Gateways but different snapshot pointers")
	}
	if h.snapshot(nodeID("a")) == h.snapshot(nodeID("c")) {
		t.Error("proxies a and c select different Gateways but share a snapshot")
	}
	if got := resourceNames(t, ra[resource.ListenerType]); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("a's listeners = %v, want [0.0.0.0_80]", got)
	}
	if ra[resource.RouteType].GetVersionInfo() != rb[resource.RouteType].GetVersionInfo() {
		t.Error("a and b were sent different route versions")
	}
	if got := resourceNames(t, rc[resource.ListenerType]); !slices.Equal(got, []string{"0.0.0.0_8080"}) {
		t.Errorf("c's listeners = %v, want [0.0.0.0_8080]", got)
	}
	// Clusters are translated once and shared: every group has the same CDS version.
	if ra[resource.ClusterType].GetVersionInfo() != rc[resource.ClusterType].GetVersionInfo() {
		t.Error("groups got different cluster versions from one push")
	}

	// A second push translates each group once again, and still shares.
	h.update("vs-change", withRoute("reviews.example.com", "reviews.example.org")...)
	a.ack(a.next(resource.RouteType))
	b.ack(b.next(resource.RouteType))
	if got := h.gen.gateways.Load(); got != 4 {
		t.Errorf("BuildGateway ran %d times after two pushes with two groups, want 4", got)
	}
	if got := h.gen.services.Load(); got != 2 {
		t.Errorf("BuildServices ran %d times after two pushes, want 2", got)
	}
	if h.snapshot(nodeID("a")) != h.snapshot(nodeID("b")) {
		t.Error("after the second push a and b no longer share a snapshot")
	}
	if got := h.metric("wayfinder_translations_total", "what", "gateway"); got != 4 {
		t.Errorf("wayfinder_translations_total{what=gateway} = %v, want 4", got)
	}
}

func TestProxyConnectingBetweenPushesGetsItsGroupsSnapshot(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	a.syncAll()
	before := h.gen.gateways.Load()

	// Same Gateways as a: no translation, same snapshot.
	d := h.connect(nodeID("d"), map[string]string{"istio": "ingressgateway", "version": "v2"})
	d.syncAll()
	if got := h.gen.gateways.Load(); got != before {
		t.Errorf("a proxy of an existing group caused %d translations, want 0", got-before)
	}
	if h.snapshot(nodeID("d")) != h.snapshot(nodeID("a")) {
		t.Error("d selects the same Gateways as a but got another snapshot")
	}

	// Labels that add a Gateway: a new group, translated once on connect.
	e := h.connect(nodeID("e"), edgeLabels)
	got := e.syncAll()
	if n := h.gen.gateways.Load() - before; n != 1 {
		t.Errorf("a proxy of a new group caused %d translations, want 1", n)
	}
	if names := resourceNames(t, got[resource.ListenerType]); !slices.Equal(names, []string{"0.0.0.0_80", "0.0.0.0_9090"}) {
		t.Errorf("e's listeners = %v, want both of its Gateways' ports", names)
	}
	f := h.connect(nodeID("f"), edgeLabels)
	f.syncAll()
	if n := h.gen.gateways.Load() - before; n != 1 {
		t.Errorf("a second proxy of the new group translated again (%d translations)", n)
	}
	if h.snapshot(nodeID("f")) != h.snapshot(nodeID("e")) {
		t.Error("e and f share Gateways but not a snapshot")
	}

	// A proxy no Gateway selects gets clusters and no listeners.
	n := h.connect(nodeID("none"), nil)
	got = n.syncAll()
	if names := resourceNames(t, got[resource.ListenerType]); len(names) != 0 {
		t.Errorf("unselected proxy got listeners %v", names)
	}
	if _, ok := got[resource.EndpointType]; !ok {
		t.Error("unselected proxy got no endpoints")
	}
}

func TestConnectingProxyWaitsForSyncAndReadinessFlips(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	if code, body := h.get("/healthz/ready"); code != 503 || !strings.Contains(string(body), "config source") {
		t.Errorf("before sync: /healthz/ready = %d %q, want 503 waiting for the config source", code, body)
	}
	a := h.connect(nodeID("a"), ingressLabels)
	a.subscribe(resource.ClusterType)
	h.syncAndWait()
	if code, body := h.get("/healthz/ready"); code != 200 {
		t.Errorf("after sync and first push: /healthz/ready = %d %q, want 200", code, body)
	}
	// The first response is the synced config, never an empty one.
	cds := a.next(resource.ClusterType)
	if names := resourceNames(t, cds); !slices.Equal(names, []string{"outbound|9080||reviews.default.svc.cluster.local"}) {
		t.Errorf("first CDS response has %v", names)
	}
	a.syncFrom(cds)
}

func TestNackIsNotAnsweredWithTheRejectedConfig(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	v1 := a.syncAll()[resource.RouteType]

	h.update("vs-change", withRoute("reviews.example.com", "v2.example.com")...)
	v2 := a.next(resource.RouteType)
	a.nack(v2, "route config rejected: test")
	// Envoy may ask again on the rejected nonce (say, with other names)
	// before any new response; that must not bring the rejected config back.
	a.subscribe(resource.RouteType, a.names[resource.RouteType]...)
	// If either request had been answered, that RDS would arrive before
	// the barrier's CDS and fail it.
	a.barrier()

	if got := h.metric("pilot_total_xds_rejects", "type", "rds"); got != 1 {
		t.Errorf("pilot_total_xds_rejects{type=rds} = %v, want 1", got)
	}
	rds := syncOf(t, h, nodeID("a"), "rds")
	if rds.Status != "NACKED" || rds.SentVersion != v2.GetVersionInfo() || rds.AckedVersion != v1.GetVersionInfo() {
		t.Errorf("syncz rds = %+v, want NACKED, sent %s, acked %s", rds, v2.GetVersionInfo(), v1.GetVersionInfo())
	}
	if rds.LastNack == nil || rds.LastNack.Version != v2.GetVersionInfo() || rds.LastNack.Message != "route config rejected: test" ||
		rds.LastNack.Nonce != v2.GetNonce() || !rds.LastNack.At.Equal(t0) {
		t.Errorf("syncz rds lastNack = %+v, want version %s, nonce %s, the message, at %v", rds.LastNack, v2.GetVersionInfo(), v2.GetNonce(), t0)
	}

	// The next change is delivered.
	h.update("vs-change", withRoute("reviews.example.com", "v3.example.com")...)
	v3 := a.next(resource.RouteType)
	if v3.GetVersionInfo() == v2.GetVersionInfo() || v3.GetVersionInfo() == v1.GetVersionInfo() {
		t.Fatalf("after the NACK got version %s again", v3.GetVersionInfo())
	}
	a.ack(v3)
	a.barrier()
	rds = syncOf(t, h, nodeID("a"), "rds")
	if rds.Status != "SYNCED" || rds.AckedVersion != v3.GetVersionInfo() || rds.LastNack == nil {
		t.Errorf("after the next change syncz rds = %+v, want SYNCED at %s with the NACK kept", rds, v3.GetVersionInfo())
	}
}

func TestInvalidNodeIDEndsTheStream(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	for _, id := range []string{"garbage", "router~10.0.0.1", "gateway~10.0.0.1~pod.ns~ns.svc.cluster.local"} {
		c := h.connect(id, nil)
		c.subscribe(resource.ClusterType)
		err := c.streamError()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), `"`+id+`"`) {
			t.Errorf("node id %q: stream ended with %v, want InvalidArgument naming the id", id, err)
		}
	}
	if got := h.s.Adsz(nil).TotalProxies; got != 0 {
		t.Errorf("%d proxies registered from invalid ids", got)
	}
}

func TestConfigChangeResendsOnlyChangedTypes(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	first := a.syncAll()
	pushes := func(typ string) float64 { return h.metric("pilot_xds_pushes", "type", typ) }

	// Routes only: CDS, EDS and LDS would all come before RDS in ADS order.
	h.update("vs-change", withRoute("reviews.example.com", "other.example.com")...)
	rds := a.next(resource.RouteType)
	if rds.GetVersionInfo() == first[resource.RouteType].GetVersionInfo() {
		t.Error("route change kept the RDS version")
	}
	a.ack(rds)

	// A new service: CDS and EDS change, listeners and routes do not.
	cs := append(withRoute("reviews.example.com", "other.example.com"),
		serviceEntry("default", "ratings", "ratings.default.svc.cluster.local", 9080, "10.1.0.2"))
	h.update("se-add", cs...)
	cds := a.next(resource.ClusterType)
	a.ack(cds)
	a.subscribe(resource.EndpointType, referenced(t, cds, resource.EndpointType)...)
	eds := a.next(resource.EndpointType)
	if got := resourceNames(t, eds); len(got) != 2 {
		t.Errorf("EDS after adding a service has %v", got)
	}
	a.ack(eds)
	a.barrier() // an LDS or RDS from the service push would arrive first

	for typ, want := range map[string]float64{"cds": 3, "eds": 2, "lds": 1, "rds": 2} {
		if got := pushes(typ); got != want {
			t.Errorf("pilot_xds_pushes{type=%s} = %v, want %v", typ, got, want)
		}
	}
}

func TestConvergenceTimeIsChangeToAck(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	a.syncAll()
	h.update("vs-change", withRoute("x.example.com")...) // starts at the fake clock's now
	rds := a.next(resource.RouteType)
	h.clock.Step(3 * time.Second)
	a.ack(rds)
	a.barrier()
	hist := h.histogram("pilot_proxy_convergence_time")
	if hist.GetSampleCount() != 1 || hist.GetSampleSum() != 3 {
		t.Errorf("convergence histogram count %d sum %v, want one sample of 3s", hist.GetSampleCount(), hist.GetSampleSum())
	}
}

func TestLastStreamCloseClearsTheProxy(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a1 := h.connect(nodeID("a"), ingressLabels)
	a1.syncAll()
	a2 := h.connect(nodeID("a"), ingressLabels)
	a2.syncAll()
	if got := h.metric("pilot_xds"); got != 1 {
		t.Errorf("pilot_xds = %v with one proxy on two streams, want 1", got)
	}
	if got := len(h.s.Adsz(nil).Proxies[0].Streams); got != 2 {
		t.Errorf("adsz shows %d streams, want 2", got)
	}
	a1.close()
	a2.close()
	h.grpc.GracefulStop() // returns once every stream handler, and so OnStreamClosed, has run
	h.s.mu.Lock()
	if p := h.s.proxies[nodeID("a")]; p != nil {
		t.Error("proxy and its view kept after the proxy's last stream closed")
	}
	if len(h.s.streams) != 0 {
		t.Errorf("stream state kept: %d streams", len(h.s.streams))
	}
	h.s.mu.Unlock()
	if got := h.metric("pilot_xds"); got != 0 {
		t.Errorf("pilot_xds = %v after disconnect, want 0", got)
	}
}

func TestRunEndsStreamsOnCancel(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	a.syncAll()
	h.cancel()
	if err := a.streamError(); err != io.EOF {
		t.Errorf("stream ended with %v, want a clean end (EOF)", err)
	}
}

func TestInvalidGeneratedResourcesAreDroppedAndCounted(t *testing.T) {
	store := newTestStore(base()...)
	store.setErrors(&config.Error{Source: "bad.yaml#0", Key: config.Key{Kind: 2, Namespace: "default", Name: "broken"}, Field: "spec.http", Message: "bad"})
	h := newHarness(t, store)
	h.gen.extraClusters = []*cluster.Cluster{invalidCluster("bad-cluster")}
	h.gen.extraListeners = []*listener.Listener{listenerWithRDS("0.0.0.0_81", 81, "http.81"), listenerWithRDS("0.0.0.0_82", 82, "http.82")}
	h.gen.extraRoutes = []*route.RouteConfiguration{{Name: "orphan"}, invalidRoute("http.82")}
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	got := a.syncAll()
	if names := resourceNames(t, got[resource.ClusterType]); slices.Contains(names, "bad-cluster") {
		t.Error("invalid cluster was sent")
	}
	if names := resourceNames(t, got[resource.ListenerType]); !slices.Equal(names, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners sent %v, want only the valid, complete one", names)
	}
	if names := resourceNames(t, got[resource.RouteType]); !slices.Equal(names, []string{"http.80"}) {
		t.Errorf("routes sent %v", names)
	}
	if err := h.snapshot(nodeID("a")).Consistent(); err != nil {
		t.Error(err)
	}
	if n := h.metric("wayfinder_config_errors", "kind", "none", "origin", "translation"); n != 5 {
		t.Errorf("translation config errors = %v, want 5 (cluster, 2 listeners, 2 routes)", n)
	}
	if n := h.metric("wayfinder_config_errors", "kind", "VirtualService", "origin", "source"); n != 1 {
		t.Errorf("source config errors = %v, want 1", n)
	}
	var cz debugapi.Configz
	_, body := h.get("/debug/configz")
	if err := json.Unmarshal(body, &cz); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range cz.Errors {
		msgs = append(msgs, e.Origin+" "+e.Source+": "+e.Message)
	}
	for _, want := range []string{"source bad.yaml#0: bad", "translation generated cds bad-cluster: fails Envoy validation",
		"translation generated lds 0.0.0.0_81: refers to rds [http.81]", "translation generated rds orphan: is not referred to",
		"translation generated rds http.82: fails Envoy validation", "translation generated lds 0.0.0.0_82: refers to rds [http.82]"} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("configz errors %q lack %q", msgs, want)
		}
	}
}

func TestTranslatorPanicKeepsProxiesOnTheirConfig(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	first := a.syncAll()
	before := h.snapshot(nodeID("a"))
	push := func(reason string, cs ...config.Config) {
		h.store.set(cs...)
		// Called directly, not through the debouncer, so it has finished
		// when it returns.
		h.s.push(&model.PushRequest{Full: true, Reasons: map[string]int{reason: 1}, Start: h.clock.Now()})
	}

	h.gen.panicGateway.Store(true)
	push("vs-change", withRoute("panic.example.com")...)
	if h.snapshot(nodeID("a")) != before {
		t.Error("a gateway translator panic replaced the proxy's snapshot")
	}
	_, tr := h.s.currentErrors()
	if len(tr) != 1 || !strings.Contains(tr[0].Message, "gateway translation panicked: gateway: test panic") {
		t.Errorf("translation errors after the panic: %v", tr)
	}

	h.gen.panicGateway.Store(false)
	h.gen.panicServices.Store(true)
	push("se-change", serviceEntry("default", "reviews", "reviews.default.svc.cluster.local", 9080, "10.9.9.9"))
	if h.snapshot(nodeID("a")) != before {
		t.Error("a service translator panic replaced the proxy's snapshot")
	}

	// Once the translators work, the next push is delivered; an empty or
	// partial config from the failed pushes would have arrived first.
	h.gen.panicServices.Store(false)
	push("vs-change", withRoute("fixed.example.com")...)
	rds := a.next(resource.RouteType)
	if rds.GetVersionInfo() == first[resource.RouteType].GetVersionInfo() {
		t.Error("the repaired push did not change routes")
	}
	a.ack(rds)
	a.barrier()
}

// syncOf reads one type of one proxy from /debug/syncz.
func syncOf(t *testing.T, h *harness, id, typ string) debugapi.SyncType {
	t.Helper()
	var sz debugapi.Syncz
	_, body := h.get("/debug/syncz")
	if err := json.Unmarshal(body, &sz); err != nil {
		t.Fatal(err)
	}
	for _, p := range sz.Proxies {
		if p.ID != id {
			continue
		}
		for _, st := range p.Types {
			if st.Type == typ {
				return st
			}
		}
	}
	t.Fatalf("syncz has no %s for %s: %s", typ, id, body)
	return debugapi.SyncType{}
}
