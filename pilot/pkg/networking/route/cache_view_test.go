package route

import (
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// Two proxy views of one push read different DestinationRules for one
// host (model.PushContext.ForProxy): namespace shop's own rule hashes on a
// header for its gateways only. Cached routes are kept per view, so each
// view gets exactly what an uncached translation gives it, in any order,
// and the second round reuses both.
func TestCacheKeepsViewsApart(t *testing.T) {
	docs := `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cart, namespace: cart}
spec:
  hosts: [cart.cart.svc.cluster.local]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: sticky, namespace: shop}
spec:
  host: cart.cart.svc.cluster.local
  trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: cart, namespace: web}
spec:
  hosts: [cart.example.com]
  gateways: [istio-system/gw]
  http: [{route: [{destination: {host: cart.cart.svc.cluster.local}}]}]
`
	cfgs, errs := manifest.Parse("test.yaml", []byte(docs), manifest.Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	push := model.NewPushContext(memory.New(cfgs))
	shop := push.ForProxy(&model.Proxy{Namespace: "shop"})
	if shop == push || shop.View() == "" {
		t.Fatal("namespace shop should have a view of its own")
	}
	hashes := func(p *model.PushContext) bool {
		return strings.Contains(dump(t, p), "x-user")
	}
	cache := NewCache()
	for round := range 2 {
		// Alternate the views: an entry of one must never serve the other.
		if got, _ := cachedPush(t, cache, shop); !strings.Contains(got[0].String(), "x-user") {
			t.Errorf("round %d: shop's gateway routes do not hash on x-user", round)
		}
		if got, _ := cachedPush(t, cache, push); strings.Contains(got[0].String(), "x-user") {
			t.Errorf("round %d: the default view got shop's hash policy", round)
		}
	}
	if !hashes(shop) || hashes(push) {
		t.Error("uncached: only shop's view hashes")
	}
	if s := cache.Stats(); s.Reused < 2 {
		t.Errorf("cache stats %+v: the second round should reuse both views' routes", s)
	}
}

// dump is an uncached translation of p's routes, as text.
func dump(t *testing.T, p *model.PushContext) string {
	t.Helper()
	rcs, _ := BuildGatewayRoutes(p, model.MergeGateways(p.Gateways()))
	var b strings.Builder
	for _, rc := range rcs {
		b.WriteString(rc.String())
	}
	return b.String()
}
