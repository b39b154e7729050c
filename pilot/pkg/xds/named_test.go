package xds

import (
	"slices"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

const (
	reviewsLDS = "reviews.default.svc.cluster.local:9080"
	ratingsLDS = "ratings.default.svc.cluster.local:9080"
	reviewsCDS = "outbound|9080||reviews.default.svc.cluster.local"
	ratingsCDS = "outbound|9080||ratings.default.svc.cluster.local"
)

// connectGRPC connects a proxyless gRPC client: node type "proxyless", or
// a sidecar-typed id with GENERATOR=grpc when generator is set.
func (h *harness) connectGRPC(pod string, generator bool) *adsClient {
	h.t.Helper()
	md := map[string]any{"NAMESPACE": "default"}
	id := "proxyless~10.0.0.2~" + pod + ".default~default.svc.cluster.local"
	if generator {
		md["GENERATOR"] = "grpc"
		id = "sidecar~10.0.0.2~" + pod + ".default~default.svc.cluster.local"
	}
	meta, err := structpb.NewStruct(md)
	if err != nil {
		h.t.Fatal(err)
	}
	return dial(h.t, h.addr, &core.Node{Id: id, Metadata: meta})
}

func withRatings() []config.Config {
	return append(base(), serviceEntry("default", "ratings", "ratings.default.svc.cluster.local", 9080, "10.1.0.2"))
}

// A named request for a listener that does not exist is answered, empty,
// once; the listener is delivered when it appears.
func TestNamedRequestForUnknownListenerIsAnsweredThenDelivered(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	c := h.connectGRPC("app-1", false)
	c.subscribe(resource.ListenerType, ratingsLDS)
	empty := c.next(resource.ListenerType)
	if n := len(empty.GetResources()); n != 0 {
		t.Fatalf("unknown listener answered with %d resources", n)
	}
	c.ack(empty)
	// The ACK of the empty answer is not answered again. (The barrier's
	// CDS names one cluster, which the update below does not change.)
	c.names[resource.ClusterType] = []string{reviewsCDS}
	c.barrier()

	h.update("se-add", withRatings()...)
	lds := c.next(resource.ListenerType)
	if got := resourceNames(t, lds); !slices.Equal(got, []string{ratingsLDS}) {
		t.Errorf("after the service appeared, LDS = %v, want [%s]", got, ratingsLDS)
	}
	if lds.GetVersionInfo() == empty.GetVersionInfo() {
		t.Error("the listener arrived with the empty answer's version")
	}
	c.ack(lds)
	c.barrier()
	if got := h.gen.proxyless.Load(); got != 2 {
		t.Errorf("BuildProxyless ran %d times for two pushes, want 2", got)
	}
}

// Two gRPC clients naming different resources each get exactly their
// names, of every type, from one shared translation; a change to one's
// resources is not sent to the other.
func TestNamedClientsGetExactlyWhatTheyAskFor(t *testing.T) {
	h := newHarness(t, newTestStore(withRatings()...))
	h.syncAndWait()
	a := h.connectGRPC("app-a", false)
	b := h.connectGRPC("app-b", true)
	sync := func(c *adsClient, lds, cds string) {
		t.Helper()
		for _, step := range []struct{ typeURL, name string }{
			{resource.ListenerType, lds}, {resource.RouteType, lds}, {resource.ClusterType, cds}, {resource.EndpointType, cds},
		} {
			c.subscribe(step.typeURL, step.name)
			resp := c.next(step.typeURL)
			if got := resourceNames(t, resp); !slices.Equal(got, []string{step.name}) {
				t.Errorf("%s asked for %s %s, got %v", c.node.GetId(), snapshot.ShortType(step.typeURL), step.name, got)
			}
			c.ack(resp)
		}
	}
	sync(a, reviewsLDS, reviewsCDS)
	sync(b, ratingsLDS, ratingsCDS)
	if got := h.gen.proxyless.Load(); got != 1 {
		t.Errorf("BuildProxyless ran %d times for two clients of one push, want 1", got)
	}
	if h.snapshot(a.node.GetId()) != h.snapshot(b.node.GetId()) {
		t.Error("the two proxyless clients do not share one view")
	}
	// The proxyless view holds both services; a gateway proxy of the same
	// push is not affected by it.
	if got := h.snapshot(a.node.GetId()).Set(resource.ListenerType).Names(); !slices.Equal(got, []string{ratingsLDS, reviewsLDS}) {
		t.Errorf("proxyless listeners %v", got)
	}

	// Only ratings' endpoints change: b gets its EDS, a nothing.
	cs := withRatings()
	cs[len(cs)-1] = serviceEntry("default", "ratings", "ratings.default.svc.cluster.local", 9080, "10.1.0.3")
	h.update("se-change", cs...)
	eds := b.next(resource.EndpointType)
	if got := resourceNames(t, eds); !slices.Equal(got, []string{ratingsCDS}) {
		t.Errorf("b's EDS update %v", got)
	}
	b.ack(eds)
	b.barrier()
	a.barrier() // any response for a would arrive before the barrier's
}

// Every resource is marshaled once per content, however many proxies share
// it, and an unchanged resource is not marshaled again by the next push.
func TestResourcesAreMarshaledOncePerVersion(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	var clients []*adsClient
	for _, pod := range []string{"a", "b", "c", "d", "e"} {
		c := h.connect(nodeID(pod), ingressLabels)
		c.syncAll()
		clients = append(clients, c)
	}
	marshals := func(typ string) float64 { return h.metric("wayfinder_xds_marshal_total", "type", typ) }
	for typ, want := range map[string]float64{"cds": 1, "eds": 1, "lds": 1, "rds": 1} {
		if got := marshals(typ); got != want {
			t.Errorf("%s marshaled %v times for 5 proxies sharing one resource, want %v", typ, got, want)
		}
	}
	before := h.snapshot(nodeID("a"))

	h.update("vs-change", withRoute("reviews.example.com", "other.example.com")...)
	for _, c := range clients {
		c.ack(c.next(resource.RouteType))
	}
	for typ, want := range map[string]float64{"cds": 1, "eds": 1, "lds": 1, "rds": 2} {
		if got := marshals(typ); got != want {
			t.Errorf("after a route change %s marshaled %v times in all, want %v", typ, got, want)
		}
	}
	after := h.snapshot(nodeID("a"))
	for _, i := range []int{snapshot.CDS, snapshot.EDS, snapshot.LDS} {
		if after.Sets[i].Items[0] != before.Sets[i].Items[0] {
			t.Errorf("unchanged %s resource was not reused", snapshot.ShortType(snapshot.Types[i]))
		}
	}
	if after.Sets[snapshot.RDS].Items[0] == before.Sets[snapshot.RDS].Items[0] {
		t.Error("changed route configuration kept its old encoding")
	}
}

// A push that is not Full rebuilds and re-sends endpoints only.
func TestEndpointsOnlyPushRebuildsAndSendsOnlyEDS(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	first := a.syncAll()
	services, gateways := h.gen.services.Load(), h.gen.gateways.Load()

	cs := base()
	cs[4] = serviceEntry("default", "reviews", "reviews.default.svc.cluster.local", 9080, "10.1.0.9")
	h.store.set(cs...)
	h.s.ConfigUpdate(&model.PushRequest{Full: false, Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now()})
	eds := a.next(resource.EndpointType)
	if eds.GetVersionInfo() == first[resource.EndpointType].GetVersionInfo() {
		t.Error("endpoint change kept the EDS version")
	}
	a.ack(eds)
	a.barrier() // a CDS, LDS or RDS response from the push would come first

	if got := h.gen.services.Load() - services; got != 0 {
		t.Errorf("endpoints-only push ran BuildServices %d times", got)
	}
	if got := h.gen.gateways.Load() - gateways; got != 0 {
		t.Errorf("endpoints-only push ran BuildGateway %d times", got)
	}
	if got := h.gen.endpoints.Load(); got != 1 {
		t.Errorf("BuildEndpoints ran %d times, want 1", got)
	}
	for typ, want := range map[string]float64{"cds": 2, "eds": 2, "lds": 1, "rds": 1} {
		if got := h.metric("pilot_xds_pushes", "type", typ); got != want {
			t.Errorf("pilot_xds_pushes{type=%s} = %v, want %v", typ, got, want)
		}
	}
	st := syncOf(t, h, nodeID("a"), "cds")
	if st.SnapshotVersion != first[resource.ClusterType].GetVersionInfo() {
		t.Errorf("cluster version changed on an endpoints-only push: %+v", st)
	}
}
