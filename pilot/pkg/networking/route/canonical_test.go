package route

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Routes of different VirtualServices with the same match, retries,
// timeout and weights share those parts; a different value gets its own.
func TestRoutesShareEqualParts(t *testing.T) {
	http := func(name, timeout string) string {
		return "name: " + name + `
    match: [{headers: {x-canary: {exact: "true"}}}]
    timeout: ` + timeout + `
    retries: {attempts: 3, perTryTimeout: 2s}
    route:
    - {destination: {host: reviews.default.svc.cluster.local, subset: v1}, weight: 90}
    - {destination: {host: reviews.default.svc.cluster.local, subset: v2}, weight: 10}`
	}
	a, b, c := oneRoute(t, http("a", "5s")), oneRoute(t, http("b", "5s")), oneRoute(t, http("c", "7s"))
	if a == b {
		t.Fatal("the routes themselves are one object")
	}
	if a.GetMatch() != b.GetMatch() {
		t.Error("equal matches are two objects")
	}
	if a.GetRoute().GetRetryPolicy() != b.GetRoute().GetRetryPolicy() {
		t.Error("equal retry policies are two objects")
	}
	if a.GetRoute().GetMaxStreamDuration() != b.GetRoute().GetMaxStreamDuration() {
		t.Error("equal stream durations are two objects")
	}
	if c.GetRoute().GetMaxStreamDuration() == a.GetRoute().GetMaxStreamDuration() ||
		c.GetRoute().GetMaxStreamDuration().GetGrpcTimeoutHeaderMax().AsDuration() != 7*time.Second {
		t.Errorf("a 7s timeout got %v", c.GetRoute().GetMaxStreamDuration())
	}
	wa, wb := a.GetRoute().GetWeightedClusters().GetClusters(), b.GetRoute().GetWeightedClusters().GetClusters()
	if len(wa) != 2 || wa[0].GetWeight() != wb[0].GetWeight() || wa[0].GetWeight().GetValue() != 90 || wa[1].GetWeight().GetValue() != 10 {
		t.Errorf("weights %v and %v", wa, wb)
	}
	noTimeout := oneRoute(t, "name: d\n    route: [{destination: {host: reviews.default.svc.cluster.local}}]").GetRoute()
	if noTimeout.GetTimeout() != sharedNoTimeout || noTimeout.GetTimeout().AsDuration() != 0 {
		t.Errorf("a route without a timeout has %v", noTimeout.GetTimeout())
	}
}

// The table does not keep a part alive: once nothing holds it, its entry
// goes, and an equal part made later is shared from then on.
func TestCanonForgetsPartsNoRouteHolds(t *testing.T) {
	var c canon[routev3.RouteMatch, *routev3.RouteMatch]
	m := c.get(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/gone"}})
	if again := c.get(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/gone"}}); again != m {
		t.Fatal("an equal match was not shared")
	}
	kept := c.get(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/kept"}})
	if c.size() != 2 {
		t.Fatalf("%d entries, want 2", c.size())
	}
	m = nil
	gcUntil(func() bool { return c.size() == 1 })
	if c.size() != 1 {
		t.Fatalf("%d entries after the match was dropped, want 1", c.size())
	}
	if got := c.get(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/kept"}}); got != kept {
		t.Error("the match still held is not shared any more")
	}
	if !proto.Equal(kept, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/kept"}}) {
		t.Errorf("kept match changed: %v", kept)
	}
}

// Once most parts are gone, the table is copied into a map of the size it
// has: a Go map keeps the buckets of the most it ever held.
func TestCanonShrinksAfterMostPartsGo(t *testing.T) {
	var c canon[routev3.RouteMatch, *routev3.RouteMatch]
	held := make([]*routev3.RouteMatch, 5000)
	for i := range held {
		held[i] = c.get(&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: fmt.Sprintf("/p-%d", i)}})
	}
	kept := slices.Clone(held[:10])
	held = nil
	peak := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.peak
	}
	gcUntil(func() bool { return c.size() == 10 })
	if n, p := c.size(), peak(); n != 10 || p > 1024 {
		t.Fatalf("%d entries, peak %d after all but 10 of 5,000 parts went; want 10, in a map made anew (peak at most 1,024)", n, p)
	}
	runtime.KeepAlive(kept)
}

// gcUntil collects garbage until cond holds or 10 s pass: a dropped part
// leaves a canon once collected. Not fatal: the caller checks what is left.
func gcUntil(cond func() bool) {
	_ = poll.Wait(func() bool {
		if cond() {
			return true
		}
		runtime.GC()
		return false
	}, poll.Timeout(10*time.Second), poll.Interval(10*time.Millisecond))
}
