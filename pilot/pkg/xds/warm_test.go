package xds

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/push"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func warmOn(o *Options) { o.WarmGateways = true }

// With no proxy connected, the first push translates the configuration
// each Gateway's selector picks out, makes no group of it, and sends
// nothing; a proxy connecting afterwards is translated and served as
// usual, and pushes with proxies connected warm nothing.
func TestWarmUpTranslatesEachSelectorsGatewaysBeforeAnyProxy(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), warmOn)
	h.syncAndWait()

	keyOf := func(names ...string) string {
		var gws []config.Config
		for _, c := range base() {
			if slices.Contains(names, c.Name) && c.Kind == schema.Gateway {
				gws = append(gws, c)
			}
		}
		return model.GatewayGroupKey(gws)
	}
	got := h.gen.translatedGroups()
	slices.Sort(got)
	want := []string{keyOf("public"), keyOf("internal"), keyOf("edge")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("warmed %v, want the three selectors' gateway sets %v", got, want)
	}
	if n := h.metric("wayfinder_translations_total", "what", "gateway-warm"); n != 3 {
		t.Errorf("gateway-warm translations = %v, want 3", n)
	}
	if n := h.metric("wayfinder_translations_total", "what", "gateway"); n != 0 {
		t.Errorf("gateway translations before any proxy = %v, want 0", n)
	}
	h.s.mu.Lock()
	groups := len(h.s.state.Groups)
	h.s.mu.Unlock()
	if groups != 0 {
		t.Errorf("the warm-up made %d groups, want none (a group waits for its proxy)", groups)
	}

	a := h.connect(nodeID("a"), ingressLabels)
	ra := a.syncAll()
	if got := resourceNames(t, ra[resource.ListenerType]); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("a's listeners = %v, want [0.0.0.0_80]", got)
	}
	if n := h.metric("wayfinder_translations_total", "what", "gateway"); n != 1 {
		t.Errorf("gateway translations after a proxy connected = %v, want 1", n)
	}

	h.update("vs-change", withRoute("reviews.example.com", "reviews.example.org")...)
	a.ack(a.next(resource.RouteType))
	if n := h.metric("wayfinder_translations_total", "what", "gateway-warm"); n != 3 {
		t.Errorf("gateway-warm translations after a push with a proxy = %v, want still 3", n)
	}
}

// A translator panic during the warm-up is logged and ends it; the push
// still completes (the server becomes ready) and a proxy is served.
func TestWarmUpPanicLeavesThePushAndProxiesAlone(t *testing.T) {
	h := newHarnessWith(t, newTestStore(base()...), warmOn)
	h.gen.panicGateway.Store(true)
	h.syncAndWait()
	if n := h.metric("wayfinder_translations_total", "what", "gateway-warm"); n != 1 {
		t.Errorf("gateway-warm translations = %v, want 1 (the first panicked, ending the warm-up)", n)
	}
	h.gen.panicGateway.Store(false)
	a := h.connect(nodeID("a"), ingressLabels)
	if got := resourceNames(t, a.syncAll()[resource.ListenerType]); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("a's listeners = %v, want [0.0.0.0_80]", got)
	}
}

// With the real translator, the first proxy after a warm-up reuses every
// VirtualService's routes, and its group's resources are byte for byte
// those of a server that did not warm up.
func TestWarmUpLetsTheFirstProxyReuseRoutes(t *testing.T) {
	const services = 50
	build := func(warm bool) (*DiscoveryServer, *push.Group) {
		s := NewDiscoveryServer(Options{Store: newTestStore(benchWorkload(services)...), Registry: prometheus.NewRegistry(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WarmGateways: warm})
		s.push(&model.PushRequest{Full: true, Reasons: map[string]int{"test": 1}})
		routes := s.tr.Generator().(core.DefaultGenerator).Caches.Routes
		before := routes.Stats()
		if want := map[bool]int{true: services, false: 0}[warm]; before.Translations != want {
			t.Fatalf("warm-up %v: %d VirtualServices translated before any proxy, want %d", warm, before.Translations, want)
		}
		s.pushMu.Lock()
		g, created := s.tr.GroupFor(s.state, s.state, &model.Proxy{ID: nodeID("gw"), Type: model.Router, Namespace: "istio-system", Labels: ingressLabels})
		s.pushMu.Unlock()
		if !created || g.View == nil {
			t.Fatalf("warm-up %v: group created %v, view %v", warm, created, g.View)
		}
		after := routes.Stats()
		if warm && (after.Translations != before.Translations || after.Reused-before.Reused != services) {
			t.Errorf("first proxy after the warm-up: %d translated, %d reused, want 0 and %d",
				after.Translations-before.Translations, after.Reused-before.Reused, services)
		}
		return s, g
	}
	_, warm := build(true)
	_, cold := build(false)
	for _, pair := range [][2]*snapshot.TypeSet{{warm.View.Sets[snapshot.LDS], cold.View.Sets[snapshot.LDS]}, {warm.View.Sets[snapshot.RDS], cold.View.Sets[snapshot.RDS]}} {
		w, c := pair[0], pair[1]
		if w.Version != c.Version || len(w.Items) != len(c.Items) {
			t.Fatalf("warmed set version %s (%d items), cold %s (%d items)", w.Version, len(w.Items), c.Version, len(c.Items))
		}
		for i := range w.Items {
			if !bytes.Equal(w.Items[i].Any.GetValue(), c.Items[i].Any.GetValue()) {
				t.Errorf("%s differs after a warm-up", w.Items[i].Name)
			}
		}
	}
}

// Gateways sharing a selector are warmed once, and a push warms at most
// push.MaxWarmGroups gateway configurations however many selectors there are.
func TestWarmUpIsBounded(t *testing.T) {
	var cfgs []config.Config
	for i := range push.MaxWarmGroups + 4 {
		sel := map[string]string{"app": "gw-" + strconv.Itoa(i)}
		cfgs = append(cfgs, gateway("istio-system", "gw-"+strconv.Itoa(i), sel, 80, "*"),
			gateway("istio-system", "gw-"+strconv.Itoa(i)+"-b", sel, 81, "*"))
	}
	h := newHarnessWith(t, newTestStore(cfgs...), warmOn)
	h.syncAndWait()
	if n := h.metric("wayfinder_translations_total", "what", "gateway-warm"); n != push.MaxWarmGroups {
		t.Errorf("gateway-warm translations = %v, want %d", n, push.MaxWarmGroups)
	}
	for _, key := range h.gen.translatedGroups() {
		if n := len(slices.DeleteFunc(h.gen.translatedGroups(), func(k string) bool { return k != key })); n != 1 {
			t.Errorf("gateway set %s warmed %d times, want once", key, n)
		}
	}
}
