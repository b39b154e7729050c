package xds

import (
	"io"
	"log/slog"
	"strconv"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// TestOneVirtualServiceChangeTranslatesOne changes one VirtualService of
// 5,000 and asserts the push translates that one alone, keeps every
// cluster and endpoint as they were, and serves the new routes.
func TestOneVirtualServiceChangeTranslatesOne(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 services")
	}
	const services = 5000
	cfgs := benchWorkload(services)
	store := newTestStore(cfgs...)
	s := NewDiscoveryServer(Options{Store: store, Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for i := range 3 {
		id := nodeID("gw-" + strconv.Itoa(i))
		p := &model.Proxy{ID: id, Type: model.Router, Namespace: "istio-system", Labels: ingressLabels}
		s.proxies[id] = &proxyState{proxy: p, streams: map[streamKey]*streamState{}, pending: map[string]pendingChange{}}
	}
	s.push(&model.PushRequest{Full: true, Reasons: map[string]int{"test": 1}})
	routes := s.tr.Generator().(core.DefaultGenerator).Caches.Routes
	before := routes.Stats()
	if before.Translations != services {
		t.Fatalf("first push translated %d VirtualServices, want %d", before.Translations, services)
	}
	v0 := s.proxies[nodeID("gw-0")].view

	next, key := changeOneVirtualService(cfgs, 1234, 77)
	store.set(next...)
	s.push(&model.PushRequest{Full: true, ConfigsUpdated: map[config.Key]struct{}{key: {}}, Reasons: map[string]int{"config": 1}})

	after := routes.Stats()
	if n := after.Translations - before.Translations; n != 1 {
		t.Errorf("one VirtualService changed: %d translated, want 1", n)
	}
	if n := after.Reused - before.Reused; n != services-1 {
		t.Errorf("%d translations reused, want %d", n, services-1)
	}
	v1 := s.proxies[nodeID("gw-0")].view
	if v1.Sets[snapshot.CDS] != v0.Sets[snapshot.CDS] || v1.Sets[snapshot.EDS] != v0.Sets[snapshot.EDS] {
		t.Error("clusters or endpoints were rebuilt for a VirtualService change")
	}
	if v1.Sets[snapshot.LDS].Version != v0.Sets[snapshot.LDS].Version {
		t.Error("listener version changed for a VirtualService change")
	}
	if v1.Sets[snapshot.RDS].Version == v0.Sets[snapshot.RDS].Version {
		t.Fatal("route version unchanged after a VirtualService change")
	}
	rc := &routev3.RouteConfiguration{}
	if err := v1.Sets[snapshot.RDS].Items[0].Any.UnmarshalTo(rc); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, vh := range rc.GetVirtualHosts() {
		if vh.GetName() == "svc-1234.example.com:80" {
			found = true
			if w := vh.GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters()[1].GetWeight().GetValue(); w != 10+77%80 {
				t.Errorf("changed VirtualService serves weight %d, want %d", w, 10+77%80)
			}
		}
	}
	if !found {
		t.Error("virtual host of the changed VirtualService is missing")
	}
	for id, p := range s.proxies {
		if p.view != v1 {
			t.Errorf("%s does not share the group's view", id)
		}
	}
}
