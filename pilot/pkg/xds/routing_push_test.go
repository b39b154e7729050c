package xds

import (
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// A push that changes only VirtualServices (or Gateways) translates the
// gateway side again and keeps the last push's clusters and endpoints; a
// change of any other kind, or of unknown objects, translates services too.
func TestRoutingOnlyPushKeepsServices(t *testing.T) {
	h := newHarness(t, newTestStore(base()...))
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	first := a.syncAll()
	before := h.snapshot(nodeID("a"))
	push := func(kind schema.Kind, name string, cs ...config.Config) {
		h.store.set(cs...)
		h.s.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"config-update": 1}, Start: h.clock.Now(),
			ConfigsUpdated: map[config.Key]struct{}{{Kind: kind, Namespace: "default", Name: name}: {}}})
	}

	push(schema.VirtualService, "reviews", withRoute("reviews.example.com", "reviews.example.org")...)
	rds := a.next(resource.RouteType)
	a.ack(rds)
	if rds.GetVersionInfo() == first[resource.RouteType].GetVersionInfo() {
		t.Error("the route change was not pushed")
	}
	if got := h.gen.services.Load(); got != 1 {
		t.Errorf("BuildServices ran %d times, want 1: a VirtualService change needs no new clusters", got)
	}
	after := h.snapshot(nodeID("a"))
	if after.Sets[snapshot.CDS] != before.Sets[snapshot.CDS] || after.Sets[snapshot.EDS] != before.Sets[snapshot.EDS] {
		t.Error("clusters or endpoints were rebuilt for a VirtualService change")
	}
	a.barrier() // nothing but RDS was sent

	// A ServiceEntry change rebuilds services and pushes the new endpoint.
	cs := withRoute("reviews.example.com", "reviews.example.org")
	cs[4] = serviceEntry("default", "reviews", "reviews.default.svc.cluster.local", 9080, "10.1.0.9")
	push(schema.ServiceEntry, "reviews", cs...)
	eds := a.next(resource.EndpointType)
	a.ack(eds)
	if got := h.gen.services.Load(); got != 2 {
		t.Errorf("BuildServices ran %d times after a ServiceEntry change, want 2", got)
	}
	if string(eds.GetResources()[0].GetValue()) == string(first[resource.EndpointType].GetResources()[0].GetValue()) {
		t.Error("the endpoint change was not pushed")
	}
}
