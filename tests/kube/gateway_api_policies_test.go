package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// corsRoute is the first route of the virtual host host:80 with its CORS
// per-route config (nil without one).
func corsRoute(s adsc.State, host string) (*routev3.Route, *corsv3.CorsPolicy) {
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() != host+":80" || len(vh.GetRoutes()) == 0 {
			continue
		}
		r := vh.GetRoutes()[0]
		cp := &corsv3.CorsPolicy{}
		if a := r.GetTypedPerFilterConfig()["envoy.filters.http.cors"]; a != nil && a.UnmarshalTo(cp) == nil {
			return r, cp
		}
		return r, nil
	}
	return nil, nil
}

// Against a real API server with the standard-channel CRDs: an HTTPRoute
// with a CORS filter (wildcard origin, any method, credentials) and the
// standard timeouts is accepted, its refs resolved, and reaches the
// Gateway's proxy as the CORS filter's per-route config (the origin "*" as
// istiod matches it: any well-formed origin) with the request timeout;
// removing the filter takes the config away.
func TestGatewayAPICORSAndTimeouts(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwcors")
	ns := e.ns
	api := gwc.GatewayV1()
	_, err := api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	port := gw.PortNumber(80)
	request, backend := gw.Duration("10s"), gw.Duration("3s")
	route := &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cors"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"app.example.com"},
			Rules: []gw.HTTPRouteRule{{
				Filters: []gw.HTTPRouteFilter{{Type: gw.HTTPRouteFilterCORS, CORS: &gw.HTTPCORSFilter{
					AllowOrigins:     []gw.CORSOrigin{"*"},
					AllowMethods:     []gw.HTTPMethodWithWildcard{"*"},
					AllowHeaders:     []gw.HTTPHeaderName{"*"},
					AllowCredentials: new(true),
				}}},
				Timeouts: &gw.HTTPRouteTimeouts{Request: &request, BackendRequest: &backend},
				BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
					BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}},
			}},
		},
	}
	_, err = api.HTTPRoutes(ns).Create(ctx, route, metav1.CreateOptions{})
	e.must(err)

	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, "edge-wayfinder", ns)
	s := waitFor(t, proxy, "the CORS route", func(s adsc.State) bool {
		_, cp := corsRoute(s, "app.example.com")
		return cp != nil
	})
	r, cp := corsRoute(s, "app.example.com")
	origins := cp.GetAllowOriginStringMatch()
	if len(origins) != 1 || origins[0].GetSafeRegex().GetRegex() != `^[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s?#]+$` {
		t.Errorf("the origin * is not matched as any well-formed origin: %v", origins)
	}
	if cp.GetAllowMethods() != "*" || cp.GetAllowHeaders() != "*" || !cp.GetAllowCredentials().GetValue() ||
		cp.GetForwardNotMatchingPreflights().GetValue() {
		t.Errorf("CORS policy %v, want methods and headers *, credentials, preflights answered by the gateway", cp)
	}
	if r.GetRoute().GetCluster() != e.cluster("web") || r.GetRoute().GetTimeout().AsDuration().String() != "3s" {
		t.Errorf("route %v: want cluster %s and backendRequest's 3s as the timeout (istiod's, without retry)", r.GetRoute(), e.cluster("web"))
	}
	poll.Seen(t, "HTTPRoute cors Accepted and ResolvedRefs", func() (string, bool) {
		got, err := api.HTTPRoutes(ns).Get(ctx, "cors", metav1.GetOptions{})
		if err != nil || len(got.Status.Parents) != 1 {
			return fmt.Sprintf("%v %+v", err, got.Status.Parents), false
		}
		d1, ok1 := condIs(got.Status.Parents[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		d2, ok2 := condIs(got.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
		return d1 + "; " + d2, ok1 && ok2
	}, apiPoll...)
	var cz struct {
		Errors []struct {
			Source  string `json:"source"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	e.getJSON("/debug/configz", &cz)
	for _, er := range cz.Errors {
		if strings.HasPrefix(er.Source, "HTTPRoute "+ns+"/cors") {
			t.Errorf("/debug/configz reports the valid route: %+v", er)
		}
	}

	// Without the filter, the route loses its CORS config.
	got, err := api.HTTPRoutes(ns).Get(ctx, "cors", metav1.GetOptions{})
	e.must(err)
	got.Spec.Rules[0].Filters = nil
	_, err = api.HTTPRoutes(ns).Update(ctx, got, metav1.UpdateOptions{})
	e.must(err)
	waitFor(t, proxy, "the route without CORS config", func(s adsc.State) bool {
		r, cp := corsRoute(s, "app.example.com")
		return r != nil && cp == nil
	})
}

// experimentalCluster is an API server of its own with the Gateway API's
// experimental-channel CRDs (manifests/crds/gateway-api-experimental) in
// place of the standard ones the shared cluster serves, whose HTTPRoute
// would prune retry and sessionPersistence.
func experimentalCluster(t *testing.T) *apiserver.Cluster {
	t.Helper()
	c := apiserver.Start(t, apiserver.Options{SkipGatewayAPICRDs: true})
	files, err := filepath.Glob(filepath.Join("..", "..", "manifests", "crds", "gateway-api-experimental", "gateway.networking.k8s.io_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("experimental CRDs: %v %v", files, err)
	}
	var docs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	if _, err := c.Apply(ctx, apiserver.ApplyOptions{}, docs...); err != nil {
		t.Fatal(err)
	}
	return c
}

// retry and sessionPersistence (experimental channel) against a real API
// server serving the experimental CRDs: the retry stanza and timeouts
// reach the proxy as istiod sets them (retries on connection errors and
// the codes, per-try backendRequest, backoff as Envoy's base interval,
// request for the whole); sessionPersistence is the route's stateful
// session config (a header naming the upstream host), and the route is
// Accepted.
func TestGatewayAPIRetryExperimentalCRDs(t *testing.T) {
	c := experimentalCluster(t)
	ns := c.Namespace(t, "gwretry")
	_, err := c.Clientset().CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gwc := gatewayAPIClass(t, c, ns+"-wayfinder")
	server := startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})
	api := gwc.GatewayV1()
	_, err = api.Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(ns + "-wayfinder"), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := gw.PortNumber(80)
	request, backend, backoff := gw.Duration("10s"), gw.Duration("2s"), gw.Duration("100ms")
	header := gw.HeaderBasedSessionPersistence
	created, err := api.HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"orders.example.com"},
			Rules: []gw.HTTPRouteRule{{
				Timeouts:           &gw.HTTPRouteTimeouts{Request: &request, BackendRequest: &backend},
				Retry:              &gw.HTTPRouteRetry{Attempts: new(3), Codes: []gw.HTTPRouteRetryStatusCode{503}, Backoff: &backoff},
				SessionPersistence: &gw.SessionPersistence{Type: &header, SessionName: new("x-session")},
				BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
					BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Rules[0].Retry == nil || created.Spec.Rules[0].SessionPersistence == nil {
		t.Fatalf("the experimental HTTPRoute CRD pruned retry or sessionPersistence: %+v", created.Spec.Rules[0])
	}

	proxy := gatewayProxy(t, server.GRPCAddr().String(), ns, "edge-1", "edge")
	s := waitFor(t, proxy, "the retrying route", func(s adsc.State) bool {
		r, _ := corsRoute(s, "orders.example.com")
		return r.GetRoute().GetRetryPolicy().GetNumRetries().GetValue() == 3
	})
	r, _ := corsRoute(s, "orders.example.com")
	rp := r.GetRoute().GetRetryPolicy()
	if rp.GetRetryOn() != "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes" ||
		!slices.Equal(rp.GetRetriableStatusCodes(), []uint32{503}) ||
		rp.GetPerTryTimeout().AsDuration().String() != "2s" || rp.GetRetryBackOff().GetBaseInterval().AsDuration().String() != "100ms" ||
		r.GetRoute().GetTimeout().AsDuration().String() != "10s" {
		t.Errorf("route %v: want 3 retries on connection errors and 503, per-try timeout 2s, back-off 100ms, timeout 10s", r.GetRoute())
	}
	ss := &statefulsessionv3.StatefulSessionPerRoute{}
	hs := &headerv3.HeaderBasedSessionState{}
	if cfg := r.GetTypedPerFilterConfig()["envoy.filters.http.stateful_session"]; cfg == nil || cfg.UnmarshalTo(ss) != nil ||
		ss.GetStatefulSession().GetSessionState().GetTypedConfig().UnmarshalTo(hs) != nil || hs.GetName() != "x-session" {
		t.Errorf("route %v: want a stateful session on the header x-session", r)
	}
	poll.Seen(t, "HTTPRoute orders Accepted", func() (string, bool) {
		got, err := api.HTTPRoutes(ns).Get(ctx, "orders", metav1.GetOptions{})
		if err != nil || len(got.Status.Parents) != 1 {
			return fmt.Sprintf("%v %+v", err, got.Status.Parents), false
		}
		return condIs(got.Status.Parents[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	}, apiPoll...)
}
