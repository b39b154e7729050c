package xds

import (
	"testing"

	resource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func TestObjectStatusCountsGatewaysAcksAndNacks(t *testing.T) {
	store := newTestStore(base()...)
	h := newHarness(t, store)
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	b := h.connect(nodeID("b"), ingressLabels)
	c := h.connect(nodeID("c"), internalLabels)
	for _, p := range []*adsClient{a, b, c} {
		p.syncAll()
		p.barrier() // the last ACK is processed
	}

	vs := config.Key{Kind: schema.VirtualService, Namespace: "default", Name: "reviews"}
	public := config.Key{Kind: schema.Gateway, Namespace: "istio-system", Name: "public"}
	internal := config.Key{Kind: schema.Gateway, Namespace: "istio-system", Name: "internal"}
	edge := config.Key{Kind: schema.Gateway, Namespace: "istio-system", Name: "edge"}
	se := config.Key{Kind: schema.ServiceEntry, Namespace: "default", Name: "reviews"}
	check := func(when string, k config.Key, gateways, acked, nacked int, nack string) {
		t.Helper()
		st := h.s.ObjectStatus()[k]
		if st == nil {
			t.Fatalf("%s: no state for %s", when, k)
		}
		if st.Gateways != gateways || st.Acked != acked || st.Nacked != nacked || st.FirstNack != nack {
			t.Errorf("%s: %s = %+v, want gateways %d acked %d nacked %d nack %q", when, k, st, gateways, acked, nacked, nack)
		}
	}
	check("synced", vs, 2, 2, 0, "")
	check("synced", public, 2, 2, 0, "")
	check("synced", internal, 1, 1, 0, "")
	check("synced", se, 3, 3, 0, "")
	if st := h.s.ObjectStatus()[edge]; st != nil {
		t.Errorf("a Gateway no proxy uses has state %+v", st)
	}

	// a rejects the new routes, b takes them: the NACK is counted against
	// the VirtualService and the group's Gateway, not the ServiceEntry.
	h.update("vs-change", withRoute("reviews.example.com", "v2.example.com")...)
	a.nack(a.next(resource.RouteType), "route config rejected: test")
	b.ack(b.next(resource.RouteType))
	a.barrier()
	b.barrier()
	check("after a NACK", vs, 2, 1, 1, "route config rejected: test")
	check("after a NACK", public, 2, 1, 1, "route config rejected: test")
	check("after a NACK", se, 3, 3, 0, "")

	// The fix is ACKed by both: the NACK is cleared.
	h.update("vs-change", withRoute("reviews.example.com", "v3.example.com")...)
	a.ack(a.next(resource.RouteType))
	b.ack(b.next(resource.RouteType))
	a.barrier()
	b.barrier()
	check("after the fix", vs, 2, 2, 0, "")

	// A source error names its object and field.
	store.setErrors(&config.Error{Key: vs, Field: "spec.http[0].route[0].destination.subset", Message: "subset missing"})
	st := h.s.ObjectStatus()[vs]
	if len(st.Errors) != 1 || st.Errors[0].Field != "spec.http[0].route[0].destination.subset" {
		t.Errorf("errors of %s = %v, want the source's one", vs, st.Errors)
	}
	// /debug/configz shows the same per object.
	cz := getJSON[debugapi.Configz](t, h, "/debug/configz", 200)
	found := false
	for _, s := range cz.Status {
		if s.Kind == "VirtualService" && s.Name == "reviews" {
			found = s.Gateways == 2 && s.Acked == 2 && len(s.Errors) == 1 && s.Errors[0].Field == "spec.http[0].route[0].destination.subset"
		}
	}
	if !found {
		t.Errorf("configz status lacks VirtualService default/reviews with 2 ACKs and its error: %+v", cz.Status)
	}
}
