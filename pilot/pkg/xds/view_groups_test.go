package xds

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// tenantRule is a DestinationRule of namespace tenant for default's
// reviews: a connection pool of one connection.
func tenantRule() config.Config {
	return config.Config{
		Meta: config.Meta{Kind: schema.DestinationRule, Namespace: "tenant", Name: "pool", CreationTimestamp: created},
		Spec: &networking.DestinationRule{Host: "reviews.default.svc.cluster.local", TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 1}}}},
	}
}

// reviewsPool is the connection limit of the reviews cluster a proxy got
// (0: none set).
func reviewsPool(t *testing.T, got map[string]*discoveryv3.DiscoveryResponse) uint32 {
	t.Helper()
	for _, a := range got[resource.ClusterType].GetResources() {
		c := &clusterv3.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			t.Fatal(err)
		}
		if c.GetName() == "outbound|9080||reviews.default.svc.cluster.local" {
			for _, th := range c.GetCircuitBreakers().GetThresholds() {
				return th.GetMaxConnections().GetValue()
			}
			return 0
		}
	}
	t.Fatal("no reviews cluster")
	return 0
}

// A DestinationRule of one namespace for another's service reaches only
// the proxies of its namespace (istiod's PushContext.destinationRule): they
// get a group of their own ("/view/tenant") with their own clusters, while
// the other proxies keep sharing the push's; a push of routing changes
// alone keeps both right.
func TestNamespaceViewsGetTheirOwnClusters(t *testing.T) {
	h := newHarnessWith(t, newTestStore(append(base(), tenantRule())...), func(o *Options) { o.Generator = core.DefaultGenerator{} })
	h.syncAndWait()
	sys := h.connect(nodeID("sys"), ingressLabels)
	ten := dial(t, h.addr, node("router~10.0.0.2~gw.tenant~tenant.svc.cluster.local", "tenant"))
	if n := reviewsPool(t, sys.syncAll()); n == 1 {
		t.Error("tenant's rule reached the istio-system gateway")
	}
	if n := reviewsPool(t, ten.syncAll()); n != 1 {
		t.Errorf("tenant's gateway has maxConnections %d, want its namespace's rule (1)", n)
	}
	groups := map[string]string{}
	for _, p := range h.s.Adsz(nil).Proxies {
		groups[p.ID] = p.GatewayGroup
	}
	if g := groups["router~10.0.0.2~gw.tenant~tenant.svc.cluster.local"]; !strings.Contains(g, "/view/tenant/") || g == groups[nodeID("sys")] {
		t.Errorf("groups %v: tenant's gateway wants its own, keyed /view/tenant", groups)
	}
	if h.snapshot(nodeID("sys")).Sets[snapshot.CDS] != h.s.state.Clusters {
		t.Error("the istio-system gateway no longer shares the push's clusters")
	}

	// A VirtualService change alone: clusters are kept, views included.
	h.store.set(append(withRoute("reviews.example.com", "more.example.com"), tenantRule())...)
	h.s.ConfigUpdate(&model.PushRequest{Full: true, Reasons: map[string]int{"vs": 1}, Start: h.clock.Now(),
		ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.VirtualService, Namespace: "default", Name: "reviews"}: {}}})
	sys.ack(sys.next(resource.RouteType))
	ten.ack(ten.next(resource.RouteType))
	h.s.pushMu.Lock()
	defer h.s.pushMu.Unlock()
	v := h.snapshot("router~10.0.0.2~gw.tenant~tenant.svc.cluster.local")
	if sv := h.s.state.Views["tenant"]; sv == nil || v.Sets[snapshot.CDS] != sv.Clusters || v.Sets[snapshot.CDS] == h.s.state.Clusters {
		t.Error("after a routing push, tenant's gateway does not have its view's clusters")
	}
}
