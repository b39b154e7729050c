package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRouteCases(t *testing.T) {
	got, err := parseRouteCases("hr5000x100, ls2500x16x500,hr1_000x10")
	if err != nil {
		t.Fatal(err)
	}
	want := []routeCase{{Routes: 5000, Proxies: 100}, {ListenerSets: 2500, Routes: 16, Proxies: 500}, {Routes: 1000, Proxies: 10}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got[1].String() != "ls2500x16x500" || got[1].totalRoutes() != 40000 || got[0].String() != "hr5000x100" {
		t.Errorf("names or totals wrong: %s %d %s", got[1], got[1].totalRoutes(), got[0])
	}
	if none, err := parseRouteCases(" "); err != nil || len(none) != 0 {
		t.Errorf("empty: %v, %v", none, err)
	}
	for _, bad := range []string{"5000x100", "hr5000", "ls10x100", "hr0x5", "hr5x100x3", "lsaxbxc"} {
		if _, err := parseRouteCases(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseRouteCases(defaultRouteCases); err != nil {
		t.Errorf("default: %v", err)
	}
}

// A change's path reaches Envoy as an exact path and a prefix below it;
// both name the change, and nothing else does.
func TestMarkerID(t *testing.T) {
	for _, p := range []string{markerPath(42), markerPath(42) + "/"} {
		if k, ok := markerID(p); !ok || k != 42 {
			t.Errorf("markerID(%q) = %d, %v", p, k, ok)
		}
	}
	for _, p := range []string{"/route-42", "/wfmark-", "/wfmark-x", "/wfmark--1", "/wfmark-+1", warmPrefix, "/api/wfmark-1"} {
		if _, ok := markerID(p); ok {
			t.Errorf("markerID(%q) accepted", p)
		}
	}
}

// ListenerSet-case hostnames sit under their ListenerSet's listener.
func TestRouteHostnames(t *testing.T) {
	c := routeCase{ListenerSets: 4, Routes: 16, Proxies: 1}
	if h := routeHostname(c, 35); h != "r-35.ls-2.bench.example" || listenerSetName(h) != "ls-2" {
		t.Errorf("route 35: %s under %s", h, listenerSetName(h))
	}
	r := httpRoute(c, "route-35", routeHostname(c, 35), "/route-35", 0)
	if ref := r.Spec.ParentRefs[0]; ref.Kind == nil || *ref.Kind != "ListenerSet" || ref.Name != "ls-2" {
		t.Errorf("parentRef %+v", ref)
	}
	hr := routeCase{Routes: 5000, Proxies: 1}
	if ref := httpRoute(hr, "route-1", routeHostname(hr, 1), "/route-1", 0).Spec.ParentRefs[0]; ref.Kind != nil || ref.Name != routeGateway {
		t.Errorf("HTTPRoute case parentRef %+v", ref)
	}
	if routeBackends(hr) != 100 || routeBackends(routeCase{Routes: 10, Proxies: 1}) != 1 {
		t.Errorf("backends: %d, %d", routeBackends(hr), routeBackends(routeCase{Routes: 10, Proxies: 1}))
	}
	seen := map[int]bool{}
	for n := range 100 {
		seen[changeRoute(n, 5000)] = true
	}
	if len(seen) != 100 {
		t.Errorf("the update phase edits %d distinct routes in 100 changes, want 100", len(seen))
	}
}

// Each change counts from its write to the last proxy's first ACK of it;
// ACKs repeated by state of the world, of changes never written and of
// unknown proxies are ignored; failed changes are left out.
func TestPropTrackerSummary(t *testing.T) {
	tr := newPropTracker(2, 4)
	var clock time.Duration
	tr.since = func() time.Duration { return clock }
	at := func(ms int) { clock = time.Duration(ms) * time.Millisecond }

	at(10)
	tr.writing(0)
	at(12)
	tr.written(0)
	at(20)
	tr.ack(0, 0)
	tr.ack(0, 3) // not written: ignored
	tr.ack(7, 0) // no such proxy
	if tr.delivered(0) {
		t.Fatal("change 0 delivered with one proxy of two")
	}
	at(30)
	tr.ack(1, 0)
	at(50)
	tr.ack(0, 0) // again, with the next route table
	if !tr.wait(context.Background(), 0, time.Hour) {
		t.Fatal("change 0 not delivered")
	}

	at(60)
	tr.writing(1)
	tr.written(1) // refused by the API server

	at(100)
	tr.writing(2)
	at(130)
	tr.ack(0, 2)
	tr.ack(0, 0)
	at(135)
	tr.ack(1, 2)
	at(140)
	tr.written(2) // the proxies had it before the API server answered

	at(200)
	tr.writing(3)
	tr.written(3)
	tr.ack(1, 3) // one proxy only: not complete
	if tr.wait(context.Background(), 3, time.Millisecond) {
		t.Error("change 3 reported delivered")
	}

	s := tr.summarize(0, 4, func(k int) bool { return k == 1 })
	want := propSummary{Changes: 4, Complete: 2, Failed: 1, AllP50Ms: 20, AllP99Ms: 35, AllMaxMs: 35,
		AnsweredP50Ms: 0, AnsweredP99Ms: 18, WriteP50Ms: 2, WriteP99Ms: 40}
	if s != want {
		t.Errorf("summary\n got %+v\nwant %+v", s, want)
	}
}

// The results say whether the target case met the target, per phase.
func TestRouteTargets(t *testing.T) {
	ph := func(name string, p99 float64, complete int) routePhase {
		return routePhase{Name: name, propSummary: propSummary{Changes: 100, Complete: complete, AllP99Ms: p99}}
	}
	out := routeTargets([]routeResult{
		{Case: routeTarget, Server: "pilot", Phases: []routePhase{ph("create", 80, 100), ph("update", 120, 100)}},
		{Case: routeCase{Routes: 5000, Proxies: 500}, Server: "pilot", Phases: []routePhase{ph("create", 10, 100)}},
	})
	for _, want := range []string{"pilot, create: p99 80 ms over 100 of 100 changes: met", "pilot, update: p99 120 ms over 100 of 100 changes: **not met**"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "\n- ") != 2 {
		t.Errorf("only the target case is checked:\n%s", out)
	}
	if out := routeTargets([]routeResult{{Case: routeTarget, Phases: []routePhase{ph("create", 50, 90)}}}); !strings.Contains(out, "not met") {
		t.Errorf("changes that never arrived still met the target:\n%s", out)
	}
}

// An empty --kube-cases runs the route cases alone; their settings are checked
// only when there are route cases.
func TestKubeFlagsRouteCases(t *testing.T) {
	k := kubeFlags{routeCases: "hr200x10", routeChanges: 10, routeTimeout: time.Second, routeGap: 0, routeFloor: 1,
		churnRates: "50", churnDuration: time.Second, churnDrain: time.Second}
	ko, err := k.parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(ko.cases) != 0 || len(ko.routes.cases) != 1 || ko.routes.changes != 10 || ko.routes.floorRuns != 1 {
		t.Errorf("parsed %+v", ko)
	}
	k.routeChanges = 0
	if _, err := k.parse(); err == nil {
		t.Error("--route-changes 0 accepted")
	}
	k = kubeFlags{cases: "100x10", churnRates: "50", churnDuration: time.Second, churnDrain: time.Second}
	if ko, err := k.parse(); err != nil || len(ko.cases) != 1 || len(ko.routes.cases) != 0 {
		t.Errorf("without route cases: %+v, %v", ko, err)
	}
}

func TestShellArgs(t *testing.T) {
	if got := shellArgs([]string{"--kube-cases", "", "--note", "it's busy", "--route-cases", "hr5000x100"}); got != `--kube-cases '' --note 'it'\''s busy' --route-cases hr5000x100` {
		t.Errorf("got %s", got)
	}
}

// A case whose route tables would not fit the load tool is refused with
// the figures, before any cluster starts.
func TestTooBigForMemory(t *testing.T) {
	if why := tooBigForMemory(routeCase{Routes: 5000, Proxies: 500}, 23.5); why != "" {
		t.Errorf("5,000 x 500 refused on 23.5 GB: %s", why)
	}
	why := tooBigForMemory(routeCase{ListenerSets: 2500, Routes: 16, Proxies: 500}, 23.5)
	if !strings.Contains(why, "40000 routes") || !strings.Contains(why, "500 proxies") {
		t.Errorf("40,000 routes x 500 proxies on 23.5 GB: %q", why)
	}
	if why := tooBigForMemory(routeCase{ListenerSets: 2500, Routes: 16, Proxies: 100}, 23.5); why != "" {
		t.Errorf("40,000 x 100 refused: %s", why)
	}
}
