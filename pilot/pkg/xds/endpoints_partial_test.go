package xds

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// countingEndpoints is the real generator counting endpoint builds.
type countingEndpoints struct {
	core.DefaultGenerator
	full, partial, partialAssignments atomic.Int32
}

func (g *countingEndpoints) BuildEndpoints(push *model.PushContext) core.EndpointResources {
	g.full.Add(1)
	return g.DefaultGenerator.BuildEndpoints(push)
}

func (g *countingEndpoints) BuildEndpointsFor(push *model.PushContext, sources map[config.Key]struct{}) core.EndpointResources {
	g.partial.Add(1)
	r := g.DefaultGenerator.BuildEndpointsFor(push, sources)
	g.partialAssignments.Add(int32(len(r.Endpoints)))
	return r
}

func partialWorkload(addr string) []config.Config {
	cs := base()
	for _, n := range []string{"a", "b", "c", "d"} {
		ip := "10.2.0.1"
		if n == "a" {
			ip = addr
		}
		cs = append(cs, serviceEntry("default", "svc-"+n, "svc-"+n+".default.svc.cluster.local", 80, ip))
	}
	return cs
}

// An endpoints-only push naming one service rebuilds that service's
// assignment alone, sends it (delta: it alone) to the proxies subscribed
// to it, and sends nothing to a proxy that is not.
func TestEndpointChangeTouchesOnlyItsSubscribers(t *testing.T) {
	const changed = "outbound|80||svc-a.default.svc.cluster.local"
	gen := &countingEndpoints{}
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) { o.Generator = gen })
	h.syncAndWait()

	all := h.connect(nodeID("all"), ingressLabels)
	first := all.syncAll()
	edsNames := resourceNames(t, first[resource.EndpointType])
	if !slices.Contains(edsNames, changed) {
		t.Fatalf("EDS names %v lack %s", edsNames, changed)
	}
	others := h.connect(nodeID("others"), ingressLabels)
	others.subscribe(resource.ClusterType)
	others.ack(others.next(resource.ClusterType))
	others.subscribe(resource.EndpointType, slices.DeleteFunc(slices.Clone(edsNames), func(n string) bool { return n == changed })...)
	others.ack(others.next(resource.EndpointType))
	d := h.connectDelta(nodeID("delta"), ingressLabels, nil)
	d.syncEnvoy(edsNames, []string{"http.80"})

	before := h.snapshot(nodeID("all")).Set(resource.EndpointType)
	h.store.set(partialWorkload("10.2.0.99")...)
	h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
		ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: "svc-a"}: {}}})

	eds := all.next(resource.EndpointType)
	all.ack(eds)
	// EDS need not carry every name in SotW (Envoy and gRPC keep the
	// assignments a response leaves out): only the changed one is sent.
	if got := resourceNames(t, eds); !slices.Equal(got, []string{changed}) {
		t.Errorf("SotW subscriber got %v, want only %s", got, changed)
	}
	if got := endpointAddresses(t, eds); !slices.Equal(got, []string{"10.2.0.99"}) {
		t.Errorf("SotW subscriber got addresses %v, want the new one", got)
	}
	deds := d.next(resource.EndpointType)
	d.ack(deds)
	if got := deltaNames(deds); !slices.Equal(got, []string{changed}) || len(deds.GetRemovedResources()) != 0 {
		t.Errorf("delta subscriber got %v (removed %v), want only %s", got, deds.GetRemovedResources(), changed)
	}
	others.barrier() // fails on any EDS response
	all.barrier()
	d.barrier(changed)

	if n := gen.full.Load(); n != 0 {
		t.Errorf("every assignment was rebuilt %d times; want only the changed service's", n)
	}
	if n, a := gen.partial.Load(), gen.partialAssignments.Load(); n != 1 || a != 1 {
		t.Errorf("partial builds %d with %d assignments, want 1 with 1", n, a)
	}
	v := h.snapshot(nodeID("all"))
	got, ok := v.Sets[snapshot.EDS].ChangedSince(before)
	if !ok {
		t.Error("the endpoint set does not record what changed")
	}
	if !slices.Equal(got, []string{changed}) {
		t.Errorf("changed = %v, want only %s", got, changed)
	}

	// A second change of the same service takes the same path, from the
	// set the first produced.
	h.store.set(partialWorkload("10.2.0.100")...)
	h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
		ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: "svc-a"}: {}}})
	eds = all.next(resource.EndpointType)
	if got := resourceNames(t, eds); !slices.Equal(got, []string{changed}) {
		t.Errorf("second change: SotW subscriber got %v, want only %s", got, changed)
	}
	all.ack(eds)
	deds = d.next(resource.EndpointType)
	d.ack(deds)
	if got := deltaNames(deds); !slices.Equal(got, []string{changed}) {
		t.Errorf("second change: delta subscriber got %v", got)
	}
	others.barrier()
	if n := gen.full.Load(); n != 0 {
		t.Errorf("second change rebuilt every assignment")
	}
}

// A request naming a service whose clusters changed shape (here: a name
// that is no service) falls back to rebuilding every assignment.
func TestEndpointChangeOfUnknownSourceRebuildsAll(t *testing.T) {
	gen := &countingEndpoints{}
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) { o.Generator = gen })
	h.syncAndWait()
	a := h.connect(nodeID("a"), ingressLabels)
	a.syncAll()
	h.store.set(partialWorkload("10.2.0.7")...)
	h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
		ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: "gone"}: {}}})
	a.ack(a.next(resource.EndpointType))
	if gen.full.Load() != 1 || gen.partial.Load() != 0 {
		t.Errorf("full %d partial %d, want one full rebuild", gen.full.Load(), gen.partial.Load())
	}
}

// A SotW stream that rejected its last endpoints, or that holds an older
// set than the one a partial push started from, is sent every assignment
// it asks for, not the changed ones alone.
func TestPartialEndpointPushSendsEverythingAfterANACK(t *testing.T) {
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) { o.Generator = &countingEndpoints{} })
	h.syncAndWait()
	c := h.connect(nodeID("n"), ingressLabels)
	first := c.syncAll()
	all := resourceNames(t, first[resource.EndpointType])
	change := func(ip string) {
		h.store.set(partialWorkload(ip)...)
		h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
			ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: "svc-a"}: {}}})
	}
	change("10.2.0.50")
	eds := c.next(resource.EndpointType)
	if got := resourceNames(t, eds); len(got) != 1 {
		t.Fatalf("first change sent %v, want one assignment", got)
	}
	c.nack(eds, "rejected for the test")
	change("10.2.0.51")
	eds = c.next(resource.EndpointType)
	if got := resourceNames(t, eds); !slices.Equal(got, all) {
		t.Errorf("after a NACK the push sent %v, want every assignment %v", got, all)
	}
	c.ack(eds)
	change("10.2.0.52")
	eds = c.next(resource.EndpointType)
	if got := resourceNames(t, eds); len(got) != 1 {
		t.Errorf("after the ACK the push sent %v, want the changed assignment alone", got)
	}
	c.ack(eds)
	c.barrier()
}

// endpointAddresses lists the endpoint addresses of the assignments in a
// response, sorted.
func endpointAddresses(t *testing.T, resp *discovery.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range resp.GetResources() {
		var cla endpoint.ClusterLoadAssignment
		if err := a.UnmarshalTo(&cla); err != nil {
			t.Fatal(err)
		}
		for _, l := range cla.GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				out = append(out, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
			}
		}
	}
	slices.Sort(out)
	return out
}

// A partial endpoint set remembers the few sets before it, with the names
// changed since each, so a stream that missed pushes (its ACK was on the
// way) is answered from those names alone; only the newest set holds
// them, and at most snapshot.MaxAncestors.
func TestPartialEndpointSetsRememberEarlierSets(t *testing.T) {
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) { o.Generator = &countingEndpoints{} })
	h.syncAndWait()
	c := h.connect(nodeID("n"), ingressLabels)
	c.syncAll()
	eds := func() *snapshot.TypeSet { return h.snapshot(nodeID("n")).Set(resource.EndpointType) }
	sets := []*snapshot.TypeSet{eds()}
	svcs := []string{"svc-a", "svc-b", "svc-c", "svc-d"}
	for i := range 12 {
		cs := partialWorkload("10.2.0.1")
		for j, cfg := range cs {
			if cfg.Name == svcs[i%4] {
				cs[j] = serviceEntry("default", cfg.Name, cfg.Name+".default.svc.cluster.local", 80, fmt.Sprintf("10.3.0.%d", i+1))
			}
		}
		h.store.set(cs...)
		h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
			ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: svcs[i%4]}: {}}})
		c.ack(c.next(resource.EndpointType))
		sets = append(sets, eds())
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	last := sets[len(sets)-1]
	for back := 1; back <= snapshot.MaxAncestors; back++ {
		changed, ok := last.ChangedSince(sets[len(sets)-1-back])
		if !ok {
			t.Fatalf("the newest set does not know the set %d pushes back", back)
		}
		// Within the last 4 pushes, each service changed once: back
		// pushes touched min(back, 4) services.
		if want := min(back, 4); len(changed) != want {
			t.Errorf("%d pushes back: %d names changed, want %d", back, len(changed), want)
		}
	}
	if _, ok := last.ChangedSince(sets[len(sets)-2-snapshot.MaxAncestors]); ok {
		t.Errorf("the newest set remembers more than %d sets", snapshot.MaxAncestors)
	}
	for i, s := range sets[:len(sets)-1] {
		for _, earlier := range sets[:i] {
			if _, ok := s.ChangedSince(earlier); ok {
				t.Errorf("set %d still holds earlier sets", i)
			}
		}
	}
}

// Under endpoint churn made of partial pushes only, the interner's index
// of assignments by content stays bounded: it keeps what the current
// assignments use, not every assignment ever built.
func TestPartialEndpointPushesKeepTheInternerBounded(t *testing.T) {
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) {
		o.Generator = &countingEndpoints{}
		o.Limits.RequestBurst = 1000 // one ACK per push, faster than any gateway would
	})
	h.syncAndWait()
	c := h.connect(nodeID("n"), ingressLabels)
	c.syncAll()
	indexed := func() int {
		_, n := h.s.tr.Interner().Sizes(snapshot.EDS)
		return n
	}
	const pushes = 300
	most := 0
	for i := range pushes {
		cs := partialWorkload(fmt.Sprintf("10.3.%d.%d", i/250, i%250+1))
		h.store.set(cs...)
		h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
			ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: "svc-a"}: {}}})
		c.ack(c.next(resource.EndpointType))
		most = max(most, indexed())
	}
	current, _ := h.s.tr.Interner().Sizes(snapshot.EDS)
	if bound := 2*current + 64 + 1; most > bound {
		t.Fatalf("the assignment index reached %d entries over %d pushes of %d assignments (bound %d)", most, pushes, current, bound)
	}
	if most < current {
		t.Fatalf("the index held %d entries, fewer than the %d assignments in use", most, current)
	}
}
