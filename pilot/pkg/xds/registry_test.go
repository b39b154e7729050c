package xds

import (
	"slices"
	"sync/atomic"
	"testing"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// fakeRegistry is a service registry whose one service's endpoint address
// can be changed.
type fakeRegistry struct{ addr atomic.Value }

func (r *fakeRegistry) Services() []*model.Service {
	return []*model.Service{{Hostname: "details.default.svc.cluster.local", Namespace: "default",
		Ports:     []model.Port{{Name: "http", Number: 9080, Protocol: "HTTP"}},
		Endpoints: []*model.Endpoint{{Address: r.addr.Load().(string)}}}}
}

// Registry services reach every push; a registry endpoint change pushed as
// an endpoints-only request re-sends EDS alone.
func TestRegistryServicesAreServed(t *testing.T) {
	reg := &fakeRegistry{}
	reg.addr.Store("10.2.0.1")
	h := newHarnessWith(t, newTestStore(base()...), func(o *Options) { o.Registries = []model.ServiceDiscovery{reg} })
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	got := a.syncAll()
	const details = "outbound|9080||details.default.svc.cluster.local"
	if names := resourceNames(t, got[resource.ClusterType]); !slices.Contains(names, details) {
		t.Fatalf("clusters %v lack the registry's service", names)
	}

	reg.addr.Store("10.2.0.2")
	h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now()})
	eds := a.next(resource.EndpointType)
	found := false
	for _, r := range eds.GetResources() {
		var cla endpoint.ClusterLoadAssignment
		if err := r.UnmarshalTo(&cla); err != nil {
			t.Fatal(err)
		}
		if cla.GetClusterName() != details {
			continue
		}
		found = true
		addr := cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress()
		if addr != "10.2.0.2" {
			t.Errorf("details endpoint %s, want 10.2.0.2", addr)
		}
	}
	if !found {
		t.Errorf("EDS update lacks %s", details)
	}
	a.ack(eds)
	a.barrier()
}
