package xds

import (
	"maps"
	"slices"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// The xDS rules for what a request subscribes to, in both protocols.
func TestSubscriptionRules(t *testing.T) {
	names := func(s *subscription) []string { return slices.Sorted(maps.Keys(s.names)) }

	// SotW, legacy allowed (CDS, LDS): empty is wildcard until a name is
	// given; then only "*" makes it wildcard.
	s := newSotwSubscription(nil, true)
	if !s.IsWildcard() {
		t.Error("SotW: an empty first request of a legacy type is not wildcard")
	}
	s.setSotw(nil)
	if !s.IsWildcard() {
		t.Error("SotW: an empty request ended legacy wildcard")
	}
	s.setSotw([]string{"a"})
	if s.IsWildcard() || !slices.Equal(names(s), []string{"a"}) {
		t.Errorf("SotW: naming a: wildcard %v names %v", s.IsWildcard(), names(s))
	}
	s.setSotw(nil)
	if s.IsWildcard() || len(s.names) != 0 {
		t.Error("SotW: after legacy mode ended an empty request subscribes to something")
	}
	s.setSotw([]string{"*", "b"})
	if !s.IsWildcard() || !slices.Equal(names(s), []string{"b"}) {
		t.Errorf("SotW: naming * and b: wildcard %v names %v", s.IsWildcard(), names(s))
	}
	// Legacy not allowed (EDS, RDS, SDS): empty is nothing.
	if newSotwSubscription(nil, false).IsWildcard() {
		t.Error("SotW: an empty request of a named type is wildcard")
	}

	// Delta, legacy allowed.
	d := newDeltaSubscription(nil, nil, nil, true)
	if !d.IsWildcard() {
		t.Error("delta: an empty first request of a legacy type is not wildcard")
	}
	d.updateDelta([]string{"a"}, nil)
	if !d.IsWildcard() || !slices.Equal(names(d), []string{"a"}) {
		t.Errorf("delta: subscribing a from legacy wildcard: wildcard %v names %v, want still wildcard", d.IsWildcard(), names(d))
	}
	d.known = map[string]string{"a": "h1", "z": "h2"}
	d.updateDelta(nil, []string{"a"})
	if v, ok := d.known["a"]; !ok || v != "" {
		t.Errorf("delta: a name unsubscribed from a wildcard stream is not marked for resending: %q %v", v, ok)
	}
	d.updateDelta(nil, []string{"*"})
	if d.IsWildcard() {
		t.Error("delta: unsubscribing * left it wildcard")
	}
	d.updateDelta([]string{"b"}, nil)
	d.updateDelta(nil, []string{"b"})
	if _, ok := d.known["b"]; ok || len(d.names) != 0 {
		t.Errorf("delta: unsubscribed b kept: known %v names %v", d.known, names(d))
	}
	// Legacy not allowed: explicit names only.
	e := newDeltaSubscription([]string{"x", "y"}, []string{"y"}, map[string]string{"x": "1"}, false)
	if e.IsWildcard() || !slices.Equal(names(e), []string{"x"}) || e.known["x"] != "1" {
		t.Errorf("delta: first request x,y minus y: wildcard %v names %v known %v", e.IsWildcard(), names(e), e.known)
	}
}

// A subscription never changes a map it shares with other streams: the
// name set of a shared request list, or a view's version map.
func TestSubscriptionCopiesSharedMapsBeforeChanging(t *testing.T) {
	sharedNames := map[string]struct{}{"a": {}, "b": {}}
	sharedKnown := map[string]string{"a": "1", "b": "2"}
	s := &subscription{names: sharedNames, namesShared: true}
	s.setKnown(sharedKnown, true)
	s.updateDelta([]string{"c"}, []string{"a"})
	if len(sharedNames) != 2 || len(sharedKnown) != 2 {
		t.Fatalf("shared maps changed: names %v known %v", sharedNames, sharedKnown)
	}
	if _, ok := s.names["c"]; !ok || len(s.names) != 2 {
		t.Errorf("own names %v, want b and c", slices.Sorted(maps.Keys(s.names)))
	}
	if _, ok := s.known["a"]; ok || s.knownShared || s.namesShared {
		t.Errorf("own known %v (shared %v), names shared %v", s.known, s.knownShared, s.namesShared)
	}
}

// Delta streams holding exactly their group's endpoints share the view's
// version map instead of a copy each; an endpoint push moves them all to
// the new set's map; a stream that unsubscribes gets its own copy and the
// others' map is untouched.
func TestDeltaStreamsShareTheViewsVersionMap(t *testing.T) {
	const changed = "outbound|80||svc-a.default.svc.cluster.local"
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) { o.Generator = &countingEndpoints{} })
	h.syncAndWait()
	edsNames := func() []string {
		return h.snapshot(nodeID("d1")).set(resource.EndpointType).names()
	}
	d1 := h.connectDelta(nodeID("d1"), ingressLabels, nil)
	d1.syncEnvoy(nil, nil)
	names := edsNames()
	d1.subscribe(resource.EndpointType, names...)
	d1.ack(d1.next(resource.EndpointType))
	d2 := h.connectDelta(nodeID("d2"), ingressLabels, nil)
	d2.syncEnvoy(names, nil)
	d1.barrier(changed)
	d2.barrier(changed)

	// known returns the stream's EDS versions once its last ACK opened a
	// watch.
	known := func(id string) (k map[string]string, shared bool) {
		waitUntil(t, id+" has an open EDS watch", func() bool {
			h.s.mu.Lock()
			defer h.s.mu.Unlock()
			for _, st := range h.s.proxies[id].streams {
				if w := st.types[resource.EndpointType].watch; w != nil {
					k, shared = w.sub.known, w.sub.knownShared
					return true
				}
			}
			return false
		})
		return k, shared
	}
	check := func(when string) {
		t.Helper()
		k1, s1 := known(nodeID("d1"))
		k2, s2 := known(nodeID("d2"))
		want := h.snapshot(nodeID("d1")).set(resource.EndpointType).versionMap()
		if !s1 || !s2 || !sameMap(k1, want) || !sameMap(k2, want) {
			t.Errorf("%s: the streams' EDS versions are not the view's shared map (shared %v %v)", when, s1, s2)
		}
	}
	check("cold")

	h.store.set(partialWorkload("10.2.0.99")...)
	h.s.ConfigUpdate(&model.PushRequest{Reasons: map[string]int{"endpoint": 1}, Start: h.clock.Now(),
		ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.ServiceEntry, Namespace: "default", Name: "svc-a"}: {}}})
	for _, d := range []*deltaClient{d1, d2} {
		r := d.next(resource.EndpointType)
		if got := deltaNames(r); !slices.Equal(got, []string{changed}) {
			t.Errorf("push sent %v, want only %s", got, changed)
		}
		d.ack(r)
		d.barrier(changed)
	}
	check("after an endpoint push")

	d1.unsubscribe(resource.EndpointType, changed)
	d1.barrier("outbound|80||svc-b.default.svc.cluster.local")
	k1, s1 := known(nodeID("d1"))
	k2, _ := known(nodeID("d2"))
	if s1 {
		t.Error("d1 still shares the view's map after unsubscribing")
	}
	if _, ok := k1[changed]; ok {
		t.Errorf("d1's versions still hold %s", changed)
	}
	if _, ok := k2[changed]; !ok || len(k2) != len(names) {
		t.Errorf("d2's versions changed with d1's unsubscribe: %d names", len(k2))
	}
}

// A subscription counts the bytes of the names it holds, once each, as
// names come and go.
func TestSubscriptionCountsNameBytes(t *testing.T) {
	w := func(names ...string) int64 {
		var n int64
		for _, s := range names {
			n += nameBytes(s)
		}
		return n
	}
	d := newDeltaSubscription([]string{"a", "bb", "bb"}, []string{"a"}, nil, false)
	if d.nameBytes != w("bb") {
		t.Fatalf("after subscribe a, bb, bb and unsubscribe a: %d bytes, want %d", d.nameBytes, w("bb"))
	}
	d.updateDelta([]string{"bb", "ccc", "*"}, []string{"zz"})
	if d.nameBytes != w("bb", "ccc") {
		t.Fatalf("after subscribe bb, ccc, *: %d bytes, want %d", d.nameBytes, w("bb", "ccc"))
	}
	d.updateDelta(nil, []string{"bb", "ccc", "bb"})
	if d.nameBytes != 0 || len(d.names) != 0 {
		t.Fatalf("after unsubscribing everything: %d bytes, %d names", d.nameBytes, len(d.names))
	}
	s := newSotwSubscription([]string{"a", "bb"}, false)
	if s.nameBytes != w("a", "bb") {
		t.Fatalf("SotW: %d bytes, want %d", s.nameBytes, w("a", "bb"))
	}
	s.setSotw([]string{"ccc"})
	if s.nameBytes != w("ccc") {
		t.Fatalf("SotW after a new list: %d bytes, want %d", s.nameBytes, w("ccc"))
	}
}
