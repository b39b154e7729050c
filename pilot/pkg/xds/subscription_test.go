package xds

import (
	"slices"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Delta streams holding exactly their group's endpoints share the view's
// version map instead of a copy each; an endpoint push moves them all to
// the new set's map; a stream that unsubscribes gets its own copy and the
// others' map is untouched.
func TestDeltaStreamsShareTheViewsVersionMap(t *testing.T) {
	const changed = "outbound|80||svc-a.default.svc.cluster.local"
	h := newHarnessWith(t, newTestStore(partialWorkload("10.2.0.1")...), func(o *Options) { o.Generator = &countingEndpoints{} })
	h.syncAndWait()
	edsNames := func() []string {
		return h.snapshot(nodeID("d1")).Set(resource.EndpointType).Names()
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
		poll.Until(t, id+" has an open EDS watch", func() bool {
			h.s.mu.Lock()
			defer h.s.mu.Unlock()
			for _, st := range h.s.proxies[id].streams {
				if w := st.types[resource.EndpointType].watch; w != nil {
					k, shared = w.sub.ReturnedResources(), w.sub.ReturnedShared()
					return true
				}
			}
			return false
		}, poll.Timeout(wait), poll.Interval(5*time.Millisecond))
		return k, shared
	}
	check := func(when string) {
		t.Helper()
		k1, s1 := known(nodeID("d1"))
		k2, s2 := known(nodeID("d2"))
		want := h.snapshot(nodeID("d1")).Set(resource.EndpointType).VersionMap()
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
