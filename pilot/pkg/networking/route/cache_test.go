package route

import (
	"runtime"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// cachedBuild translates docs through cache as a new push and asserts the
// result equals an uncached translation of the same push, errors
// included.
func cachedBuild(t *testing.T, cache *Cache, docs ...string) ([]*routev3.RouteConfiguration, []*config.Error) {
	t.Helper()
	cfgs, perrs := manifest.Parse("test.yaml", []byte(strings.Join(docs, "\n---\n")), manifest.Options{})
	if len(perrs) > 0 {
		t.Fatalf("parse: %v", perrs)
	}
	return cachedPush(t, cache, model.NewPushContext(memory.New(cfgs)))
}

// cachedPush translates push through cache and asserts the result equals
// an uncached translation of it, errors included.
func cachedPush(t *testing.T, cache *Cache, push *model.PushContext) ([]*routev3.RouteConfiguration, []*config.Error) {
	t.Helper()
	mg := model.MergeGateways(push.Gateways())
	got, errs := BuildGatewayRoutesCached(push, mg, cache)
	want, wantErrs := BuildGatewayRoutes(push, mg)
	if len(got) != len(want) {
		t.Fatalf("cached: %d route configs, uncached %d", len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("cached %s differs from uncached:\n%v\n%v", want[i].GetName(), got[i], want[i])
		}
	}
	if errString(errs) != errString(wantErrs) {
		t.Errorf("cached errors differ:\n%s---\nuncached:\n%s", errString(errs), errString(wantErrs))
	}
	return got, errs
}

const weighted = `
  - route:
    - destination: {host: reviews.default.svc.cluster.local, subset: v1}
      weight: %s
    - destination: {host: reviews.default.svc.cluster.local, subset: v2}
      weight: %s
`

func TestCacheRetranslatesOnlyTheChangedVirtualService(t *testing.T) {
	c := NewCache()
	a := vs("a", "[a.com]", strings.NewReplacer("%s", "50").Replace(weighted))
	b := vs("b", "[b.com]", `
  - route: [{destination: {host: ratings.default.svc.cluster.local}}]
`)
	rcs1, _ := cachedBuild(t, c, fixtures, gatewayYAML, a, b)
	if st := c.Stats(); st.Translations != 2 || st.Reused != 0 {
		t.Fatalf("cold: %+v, want 2 translations", st)
	}
	a2 := vs("a", "[a.com]", strings.Replace(strings.Replace(weighted, "%s", "90", 1), "%s", "10", 1))
	rcs2, _ := cachedBuild(t, c, fixtures, gatewayYAML, a2, b)
	if st := c.Stats(); st.Translations != 3 || st.Reused != 1 {
		t.Fatalf("after changing a: %+v, want 1 more translation and 1 reuse", st)
	}
	rc1, rc2 := routeConfig(t, rcs1, "http.80"), routeConfig(t, rcs2, "http.80")
	if vhost(t, rc1, "b.com:80") != vhost(t, rc2, "b.com:80") {
		t.Error("the unchanged VirtualService's virtual host is a new object; want the cached one")
	}
	if vhost(t, rc1, "a.com:80") == vhost(t, rc2, "a.com:80") {
		t.Error("the changed VirtualService's virtual host was reused")
	}
	if w := onlyWeight(t, vhost(t, rc2, "a.com:80")); w != 90 {
		t.Errorf("a's first weight = %d, want 90", w)
	}
}

func onlyWeight(t *testing.T, vh *routev3.VirtualHost) uint32 {
	t.Helper()
	if len(vh.GetRoutes()) != 1 {
		t.Fatalf("%d routes", len(vh.GetRoutes()))
	}
	return vh.GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters()[0].GetWeight().GetValue()
}

// A VirtualService's routes depend on the DestinationRule of the hosts it
// names (subsets, hash policies) and on their services' ports: a change
// to either translates it again, though the VirtualService is unchanged.
func TestCacheFollowsDestinationRulesAndServices(t *testing.T) {
	c := NewCache()
	v := vs("v", "[foo.com]", `
  - match: [{uri: {prefix: /sub}}]
    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v2}}]
  - route: [{destination: {host: ratings.default.svc.cluster.local}}]
`)
	if _, errs := cachedBuild(t, c, fixtures, gatewayYAML, v); len(errs) != 0 {
		t.Fatalf("errors: %s", errString(errs))
	}
	noV2 := strings.Replace(fixtures, ", {name: v2, labels: {version: v2}}", "", 1)
	_, errs := cachedBuild(t, c, noV2, gatewayYAML, v)
	if !hasError(errs, false, "spec.http[0].route[0].destination.subset", `subset "v2" is not defined`) {
		t.Errorf("subset removed from the DestinationRule: errors = %s", errString(errs))
	}
	if st := c.Stats(); st.Translations != 2 {
		t.Errorf("%+v: want the VirtualService translated again after its DestinationRule changed", st)
	}
	twoPorts := strings.Replace(noV2, "ports: [{number: 8080, name: http, protocol: HTTP}]",
		"ports: [{number: 8080, name: http, protocol: HTTP}, {number: 8081, name: http-b, protocol: HTTP}]", 1)
	_, errs = cachedBuild(t, c, twoPorts, gatewayYAML, v)
	if !hasError(errs, false, "spec.http[1].route[0].destination.port", "is required") {
		t.Errorf("ratings got a second port: errors = %s", errString(errs))
	}
	if st := c.Stats(); st.Translations != 3 {
		t.Errorf("%+v: want the VirtualService translated again after its service's ports changed", st)
	}
	// Unchanged again: reused, and its problems are still reported.
	_, errs = cachedBuild(t, c, twoPorts, gatewayYAML, v)
	if st := c.Stats(); st.Translations != 3 || st.Reused != 1 {
		t.Errorf("%+v: want the last translation reused", st)
	}
	if !hasError(errs, false, "spec.http[1].route[0].destination.port", "is required") {
		t.Errorf("reused translation lost its problems: %s", errString(errs))
	}
}

// sameVirtualHost must compare every field assembleVirtualHost sets; a
// field added there and not here would let a changed virtual host be
// taken for an old one.
func TestSameVirtualHostComparesEveryAssembledField(t *testing.T) {
	r := &routev3.Route{Name: "r"}
	vh := assembleVirtualHost(&virtualHost{host: "foo.com", requireTLS: true,
		contribs: []contribution{{vs: &config.Config{}, routes: []builtRoute{{route: r}}}}}, 80, &reporter{})
	set := map[string]bool{}
	vh.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		set[string(fd.Name())] = true
		return true
	})
	compared := map[string]bool{"name": true, "domains": true, "require_tls": true, "include_request_attempt_count": true, "routes": true}
	for f := range set {
		if !compared[f] {
			t.Errorf("assembleVirtualHost sets %s, which sameVirtualHost does not compare", f)
		}
	}
}

// A kept entry must not hold on to the push it was translated in: the
// VirtualService a route was built from is a copy, not a pointer into the
// push context's lists. Otherwise every push that translated one changed
// VirtualService kept its whole list of VirtualServices alive for as long
// as that entry was reused (0.8 MB a push at 5,000 services, without
// bound).
func TestCacheEntriesDoNotKeepTheirPushAlive(t *testing.T) {
	c := NewCache()
	a := vs("a", "[a.com]", strings.NewReplacer("%s", "50").Replace(weighted))
	b := vs("b", "[b.com]", "\n  - route: [{destination: {host: ratings.default.svc.cluster.local}}]\n")
	build := func(docs ...string) *model.PushContext {
		cfgs, perrs := manifest.Parse("test.yaml", []byte(strings.Join(docs, "\n---\n")), manifest.Options{})
		if len(perrs) > 0 {
			t.Fatalf("parse: %v", perrs)
		}
		push := model.NewPushContext(memory.New(cfgs))
		if _, errs := BuildGatewayRoutesCached(push, model.MergeGateways(push.Gateways()), c); len(errs) != 0 {
			t.Fatalf("errors: %s", errString(errs))
		}
		return push
	}
	first := build(fixtures, gatewayYAML, a, b)
	list := first.VirtualServicesForGateway("default/gw")
	if len(list) != 2 {
		t.Fatalf("%d VirtualServices for the gateway, want 2", len(list))
	}
	released := make(chan struct{})
	runtime.AddCleanup(&list[0], func(ch chan struct{}) { close(ch) }, released)
	list, first = nil, nil
	// b changes, a is reused from the first push.
	b2 := vs("b", "[b.com]", "\n  - route: [{destination: {host: reviews.default.svc.cluster.local}}]\n")
	second := build(fixtures, gatewayYAML, a, b2)
	if st := c.Stats(); st.Reused != 1 {
		t.Fatalf("%+v: want a reused", st)
	}
	for range 20 {
		runtime.GC()
		select {
		case <-released:
			runtime.KeepAlive(second)
			runtime.KeepAlive(c)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Error("the first push's VirtualService list is still reachable after the second push: a kept entry points into it")
	runtime.KeepAlive(c)
}

// A push that kept the last one's services and DestinationRules (model's
// WithRouting, for a change to VirtualServices alone) reuses the hosts'
// fingerprints; a push that indexed them anew computes them again, and
// follows a DestinationRule that changed.
func TestCacheKeepsHostFingerprintsWhileServicesStay(t *testing.T) {
	parse := func(docs ...string) *memory.Store {
		t.Helper()
		cfgs, perrs := manifest.Parse("test.yaml", []byte(strings.Join(docs, "\n---\n")), manifest.Options{})
		if len(perrs) > 0 {
			t.Fatalf("parse: %v", perrs)
		}
		return memory.New(cfgs)
	}
	c := NewCache()
	a := vs("a", "[a.com]", strings.NewReplacer("%s", "50").Replace(weighted))
	b := vs("b", "[b.com]", `
  - route: [{destination: {host: ratings.default.svc.cluster.local}}]
`)
	push := model.NewPushContext(parse(fixtures, gatewayYAML, a, b))
	cachedPush(t, c, push)
	computed := c.Stats().Fingerprints
	if computed == 0 {
		t.Fatal("no host fingerprint computed")
	}

	a2 := vs("a", "[a.com]", strings.Replace(strings.Replace(weighted, "%s", "90", 1), "%s", "10", 1))
	push = push.WithRouting(parse(fixtures, gatewayYAML, a2, b))
	cachedPush(t, c, push)
	if st := c.Stats(); st.Fingerprints != computed || st.Translations != 3 {
		t.Errorf("after a VirtualService change that kept the services: %+v, want %d fingerprints and 3 translations", st, computed)
	}

	// The v2 subset goes from the DestinationRule: a new push context,
	// new fingerprints, and a translated again with the problem.
	noV2 := strings.Replace(fixtures, ", {name: v2, labels: {version: v2}}", "", 1)
	push = model.NewPushContext(parse(noV2, gatewayYAML, a2, b))
	_, errs := cachedPush(t, c, push)
	if c.Stats().Fingerprints == computed {
		t.Error("a push that indexed the services anew reused their fingerprints")
	}
	if !hasError(errs, false, "spec.http[0].route[1].destination.subset", `subset "v2" is not defined`) {
		t.Errorf("subset removed from the DestinationRule: errors = %s", errString(errs))
	}
}

// Once a push has been translated and released, nothing of a
// VirtualService it no longer has is kept: not its routes, not its spec
// (a key of the spec hashes), not its virtual host. Without Release they
// stayed until the push after next.
func TestCacheReleaseDropsRemovedVirtualServices(t *testing.T) {
	c := NewCache()
	a := vs("a", "[a.com]", strings.NewReplacer("%s", "50").Replace(weighted))
	b := vs("b", "[b.com]", "\n  - route: [{destination: {host: ratings.default.svc.cluster.local}}]\n")
	parse := func(docs ...string) []config.Config {
		cfgs, perrs := manifest.Parse("test.yaml", []byte(strings.Join(docs, "\n---\n")), manifest.Options{})
		if len(perrs) > 0 {
			t.Fatalf("parse: %v", perrs)
		}
		return cfgs
	}
	first := parse(fixtures, gatewayYAML, a, b)
	released := make(chan struct{})
	for _, cfg := range first {
		if cfg.Name == "b" {
			runtime.AddCleanup(cfg.Spec.(*networking.VirtualService), func(ch chan struct{}) { close(ch) }, released)
		}
	}
	push := model.NewPushContext(memory.New(first))
	cachedPush(t, c, push)
	c.Release(push)
	first, push = nil, nil
	// b is removed; a is reused.
	second := model.NewPushContext(memory.New(parse(fixtures, gatewayYAML, a)))
	cachedPush(t, c, second)
	c.Release(second)
	if st := c.Stats(); st.Reused != 1 {
		t.Fatalf("%+v: want a reused", st)
	}
	for range 20 {
		runtime.GC()
		select {
		case <-released:
			runtime.KeepAlive(c)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Error("the removed VirtualService's spec is still reachable after the push without it was released")
	runtime.KeepAlive(c)
}
