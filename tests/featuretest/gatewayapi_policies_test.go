package featuretest

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// corsRouteYAML is an HTTPRoute whose rule answers CORS preflights for
// origins, with the standard timeouts.
func corsRouteYAML(origins string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    filters:
    - type: CORS
      cors:
        allowOrigins: ` + origins + `
        allowMethods: [GET, PUT]
        allowHeaders: [x-header-1]
        exposeHeaders: [x-header-3]
        allowCredentials: true
        maxAge: 3600
    timeouts: {request: 10s, backendRequest: 2s}
    backendRefs: [{name: reviews, port: 9080}]
`
}

// corsOf is the CORS per-route config of the first route of vhost whose
// path prefix is prefix, or nil.
func corsOf(s adsc.State, routeName, vhost, prefix string) (*corsv3.CorsPolicy, *routev3.Route) {
	for _, vh := range s.Routes[routeName].GetVirtualHosts() {
		if vh.GetName() != vhost {
			continue
		}
		for _, r := range vh.GetRoutes() {
			if r.GetMatch().GetPrefix() != prefix {
				continue
			}
			cp := &corsv3.CorsPolicy{}
			if a := r.GetTypedPerFilterConfig()["envoy.filters.http.cors"]; a != nil && a.UnmarshalTo(cp) == nil {
				return cp, r
			}
			return nil, r
		}
	}
	return nil, nil
}

func originsOf(cp *corsv3.CorsPolicy) []string {
	var out []string
	for _, m := range cp.GetAllowOriginStringMatch() {
		out = append(out, m.GetExact()+m.GetPrefix()+m.GetSafeRegex().GetRegex())
	}
	return out
}

// The HTTPRoute CORS filter, in file mode, reaches the gateway over ADS as
// the CORS filter's per-route config on the route (the listener's HTTP
// filter chain has the CORS filter before the router), with the preflight
// answer the Gateway API asks (origins, methods, headers, credentials, max
// age; preflights from other origins answered by the gateway, not
// forwarded), and the rule's timeouts as istiod sets them; an edit of the
// origins is pushed.
func TestGatewayAPIFileModeCORS(t *testing.T) {
	e := newEnv(t, map[string]string{
		"services.yaml": servicesYAML,
		"gwapi.yaml":    gatewayAPIYAML,
		"route.yaml":    corsRouteYAML(`["https://www.foo.com", "https://*.bar.com"]`),
	})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s := waitFor(t, edge, "the CORS route", func(s adsc.State) bool {
		cp, _ := corsOf(s, "http.8080", "shop.example.com:8080", "/api/")
		return allACKed(s) && cp != nil
	})
	cp, r := corsOf(s, "http.8080", "shop.example.com:8080", "/api/")
	if got, want := originsOf(cp), []string{"https://www.foo.com", `^https://.*\.bar\.com$`}; !slices.Equal(got, want) {
		t.Errorf("allowed origins %q, want %q", got, want)
	}
	if cp.GetAllowMethods() != "GET,PUT" || cp.GetAllowHeaders() != "x-header-1" || cp.GetExposeHeaders() != "x-header-3" ||
		!cp.GetAllowCredentials().GetValue() || cp.GetMaxAge() != "3600" {
		t.Errorf("CORS policy %v, want methods GET,PUT, headers x-header-1, expose x-header-3, credentials, max age 3600", cp)
	}
	if cp.GetForwardNotMatchingPreflights().GetValue() {
		t.Error("preflights of other origins are forwarded to the backend; the gateway must answer them")
	}
	if got := r.GetRoute().GetTimeout().AsDuration().String(); got != "2s" {
		t.Errorf("route timeout %s, want backendRequest's 2s (no retry stanza: istiod's choice)", got)
	}
	names := []string{}
	for _, f := range hcmOf(s.Listeners["0.0.0.0_8080"]).GetHttpFilters() {
		names = append(names, f.GetName())
	}
	if i, j := slices.Index(names, "envoy.filters.http.cors"), slices.Index(names, "envoy.filters.http.router"); i < 0 || j < i {
		t.Errorf("HTTP filters %v: the CORS filter must come before the router", names)
	}
	if slices.Contains(names, "envoy.filters.http.stateful_session") {
		t.Errorf("HTTP filters %v: a stateful session filter without sessions", names)
	}

	// An edit is pushed.
	e.write("route.yaml", corsRouteYAML(`["https://*.example.org:8443"]`))
	waitFor(t, edge, "the edited origins", func(s adsc.State) bool {
		cp, _ := corsOf(s, "http.8080", "shop.example.com:8080", "/api/")
		return allACKed(s) && slices.Equal(originsOf(cp), []string{`^https://.*\.example\.org:8443$`})
	})
	for _, err := range configz(t, e).Errors {
		if strings.Contains(err.Message, "HTTPRoute default/shop") {
			t.Errorf("error for the CORS route: %+v", err)
		}
	}
}

// retryRouteYAML is an HTTPRoute whose rule retries (experimental channel)
// within a per-try backendRequest timeout and a whole request timeout.
const retryRouteYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: orders, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [orders.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /orders}}]
    timeouts: {request: 10s, backendRequest: 2s}
    retry: {attempts: 3, codes: [503, 504], backoff: 100ms}
    sessionPersistence: {type: Header, sessionName: x-session}
    backendRefs: [{name: reviews, port: 9080}]
`

// An HTTPRoute rule's retry stanza and timeouts, in file mode, reach the
// gateway as istiod sets them: retries on connection errors and the listed
// codes, the backoff as Envoy's base interval, backendRequest per try and
// request for the whole. Its sessionPersistence (which istiod does not
// serve) is the route's stateful session config, a header naming the
// upstream host, with the stateful session filter in the listener's chain
// before the router.
func TestGatewayAPIFileModeRetry(t *testing.T) {
	e := newEnv(t, map[string]string{
		"services.yaml": servicesYAML,
		"gwapi.yaml":    gatewayAPIYAML,
		"route.yaml":    retryRouteYAML,
	})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	var r *routev3.Route
	s := waitFor(t, edge, "the retrying route", func(s adsc.State) bool {
		_, r = corsOf(s, "http.8080", "orders.example.com:8080", "/orders/")
		return allACKed(s) && r != nil
	})
	a := r.GetRoute()
	rp := a.GetRetryPolicy()
	if rp.GetNumRetries().GetValue() != 3 || rp.GetRetryOn() != "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes" ||
		!slices.Equal(rp.GetRetriableStatusCodes(), []uint32{503, 504}) {
		t.Errorf("retry policy %v, want 3 retries on connection errors and 503, 504", rp)
	}
	if rp.GetPerTryTimeout().AsDuration().String() != "2s" || rp.GetRetryBackOff().GetBaseInterval().AsDuration().String() != "100ms" ||
		a.GetTimeout().AsDuration().String() != "10s" {
		t.Errorf("route %v: want per-try timeout 2s, back-off 100ms, timeout 10s", a)
	}
	ss := &statefulsessionv3.StatefulSessionPerRoute{}
	if cfg := r.GetTypedPerFilterConfig()["envoy.filters.http.stateful_session"]; cfg == nil || cfg.UnmarshalTo(ss) != nil {
		t.Fatalf("route %v has no stateful session config", r)
	}
	hs := &headerv3.HeaderBasedSessionState{}
	state := ss.GetStatefulSession().GetSessionState()
	if state.GetName() != "envoy.http.stateful_session.header" || state.GetTypedConfig().UnmarshalTo(hs) != nil || hs.GetName() != "x-session" {
		t.Errorf("session state %v, want the header x-session", state)
	}
	names := []string{}
	for _, f := range hcmOf(s.Listeners["0.0.0.0_8080"]).GetHttpFilters() {
		names = append(names, f.GetName())
	}
	if i, j := slices.Index(names, "envoy.filters.http.stateful_session"), slices.Index(names, "envoy.filters.http.router"); i < 0 || j != i+1 {
		t.Errorf("HTTP filters %v: the stateful session filter must come right before the router", names)
	}
	for _, err := range configz(t, e).Errors {
		if strings.Contains(err.Message, "HTTPRoute default/orders") {
			t.Errorf("error for the route: %+v", err)
		}
	}
}
