package kube

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// A pod crash-looping between 0 and 1 ready endpoints pushes EDS only:
// counted both by the server (pilot_xds_pushes by type, push triggers) and
// by the gateway (responses accepted per type).
func TestEndpointChurnPushesEDSOnly(t *testing.T) {
	e := newEnv(t, "churn")
	gw := e.gateway("gw-0")
	host := e.host("reviews")
	cluster := model.ClusterName(9080, "", host)
	e.createGateway("gw")
	e.createVS(e.virtualService("bookinfo", "bookinfo.example.com", host, ""))
	e.createPod("reviews-0", map[string]string{"app": "reviews"})
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.2.0.1", "reviews-0", true})
	waitFor(t, gw, "initial config", func(s adsc.State) bool {
		return virtualHost(s, "bookinfo.example.com", cluster) && endpointCount(s, cluster) == 1
	})

	before, beforeState := e.pushes(), gw.State()
	serviceTriggers := e.metric(`pilot_push_triggers{type="service"}`)
	endpointTriggers := e.metric(`pilot_push_triggers{type="endpoint"}`)
	const flips = 10
	for i := range flips {
		ready := i%2 == 1 // not ready, ready, not ready, ...
		e.applySlice("reviews", "reviews-1", ep{"10.2.0.1", "reviews-0", ready})
		want := 0
		if ready {
			want = 1
		}
		waitFor(t, gw, "endpoint flip", func(s adsc.State) bool {
			return endpointCount(s, cluster) == want && s.Endpoints[cluster] != nil
		})
	}
	after, afterState := e.pushes(), gw.State()

	for _, typ := range []string{"cds", "lds", "rds"} {
		if after[typ] != before[typ] {
			t.Errorf("%s pushes went from %v to %v during endpoint churn; want none", typ, before[typ], after[typ])
		}
	}
	if got := after["eds"] - before["eds"]; got < flips {
		t.Errorf("eds pushes during churn = %v, want at least %d (one per flip)", got, flips)
	}
	for _, typ := range []string{adsc.ClusterType, adsc.ListenerType, adsc.RouteType} {
		if b, a := beforeState.Types[typ].ACKs, afterState.Types[typ].ACKs; a != b {
			t.Errorf("gateway accepted %d new %s responses during endpoint churn; want 0", a-b, adsc.ShortName(typ))
		}
	}
	if got := e.metric(`pilot_push_triggers{type="service"}`); got != serviceTriggers {
		t.Errorf("full (service) push triggers went from %v to %v", serviceTriggers, got)
	}
	if got := e.metric(`pilot_push_triggers{type="endpoint"}`) - endpointTriggers; got < flips {
		t.Errorf("endpoint push triggers = %v, want at least %d", got, flips)
	}
}
