package route

import (
	"strings"
	"testing"

	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	cookiev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// sessionVS is a VirtualService with the given annotations and two routes,
// a and b.
func sessionVS(annotations string) string {
	return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: v
  namespace: default
  annotations: {` + annotations + `}
spec:
  hosts: [foo.com]
  gateways: [gw]
  http:
  - name: a
    match: [{uri: {prefix: /a}}]
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
  - name: b
    route: [{destination: {host: reviews.default.svc.cluster.local}}]
`
}

const generated = `"` + model.GatewayAPIRoutesAnnotation + `": "true", `

// A generated VirtualService's sessions become the stateful session
// per-route config of the routes they name, and of no other.
func TestSessionPerRoute(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, sessionVS(generated+`"`+model.GatewayAPISessionsAnnotation+`": '{"a":{"cookie":"s","path":"/","ttl":"1h"}}'`))
	routes := routeConfig(t, rcs, "http.80").GetVirtualHosts()[0].GetRoutes()
	if len(routes) != 2 {
		t.Fatalf("routes %v", routes)
	}
	a := routes[0].GetTypedPerFilterConfig()[StatefulSessionFilterName]
	if a == nil {
		t.Fatalf("route a has no stateful session config: %v", routes[0])
	}
	ss := unpack(t, a, &statefulsessionv3.StatefulSessionPerRoute{})
	cookie := unpack(t, ss.GetStatefulSession().GetSessionState().GetTypedConfig(), &cookiev3.CookieBasedSessionState{}).GetCookie()
	if ss.GetStatefulSession().GetSessionState().GetName() != cookieSessionState || cookie.GetName() != "s" || cookie.GetPath() != "/" ||
		cookie.GetTtl().AsDuration().String() != "1h0m0s" {
		t.Errorf("session %v, want cookie s, path /, ttl 1h", ss)
	}
	if routes[1].GetTypedPerFilterConfig()[StatefulSessionFilterName] != nil {
		t.Errorf("route b has a session it was not given: %v", routes[1])
	}
}

// The annotation counts only on a VirtualService generated from Gateway
// API routes; one that cannot be read is reported and the routes are
// served without sessions.
func TestSessionAnnotationIgnoredOrReported(t *testing.T) {
	rcs := buildOK(t, fixtures, gatewayYAML, sessionVS(`"`+model.GatewayAPISessionsAnnotation+`": '{"a":{"header":"x-s"}}'`))
	for _, r := range routeConfig(t, rcs, "http.80").GetVirtualHosts()[0].GetRoutes() {
		if r.GetTypedPerFilterConfig()[StatefulSessionFilterName] != nil {
			t.Errorf("a hand-written VirtualService's annotation gave route %s a session", r.GetName())
		}
	}
	rcs, errs := build(t, fixtures, gatewayYAML, sessionVS(generated+`"`+model.GatewayAPISessionsAnnotation+`": '{"a":{}}'`))
	if len(errs) != 1 || errs[0].Field != "metadata.annotations" || !strings.Contains(errs[0].Message, "exactly one of cookie and header") {
		t.Errorf("errors %v, want one on metadata.annotations", errs)
	}
	if got := len(routeConfig(t, rcs, "http.80").GetVirtualHosts()[0].GetRoutes()); got != 2 {
		t.Errorf("%d routes served, want both", got)
	}
}

// The route cache tells apart two versions of a VirtualService that
// differ only in their sessions.
func TestSessionCacheKey(t *testing.T) {
	cache := NewCache()
	build := func(annotation string) string {
		cfgs, perrs := manifest.Parse("test.yaml", []byte(strings.Join([]string{fixtures, gatewayYAML,
			sessionVS(generated + `"` + model.GatewayAPISessionsAnnotation + `": '` + annotation + `'`)}, "\n---\n")), manifest.Options{})
		if len(perrs) > 0 {
			t.Fatal(perrs)
		}
		push := model.NewPushContext(memory.New(cfgs))
		rcs, _ := BuildGatewayRoutesCached(push, model.MergeGateways(push.Gateways()), cache)
		cache.Release(push)
		a := routeConfig(t, rcs, "http.80").GetVirtualHosts()[0].GetRoutes()[0].GetTypedPerFilterConfig()[StatefulSessionFilterName]
		if a == nil {
			return ""
		}
		ss := unpack(t, a, &statefulsessionv3.StatefulSessionPerRoute{})
		return unpack(t, ss.GetStatefulSession().GetSessionState().GetTypedConfig(), &cookiev3.CookieBasedSessionState{}).GetCookie().GetName()
	}
	if got := build(`{"a":{"cookie":"one"}}`); got != "one" {
		t.Fatalf("cookie %q, want one", got)
	}
	if got := build(`{"a":{"cookie":"two"}}`); got != "two" {
		t.Errorf("cookie %q after the annotation changed, want two: the cache kept the old translation", got)
	}
}
