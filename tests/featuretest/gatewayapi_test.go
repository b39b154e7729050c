package featuretest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

const gatewayAPIYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: wayfinder}
spec: {controllerName: wayfinder.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: wayfinder
  listeners:
  - {name: http, port: 8080, protocol: HTTP, hostname: "*.example.com"}
`

func httpRouteYAML(name, prefix string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ` + name + `, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: ` + prefix + `}}]
    backendRefs: [{name: reviews, port: 9080}]
`
}

// gatewayAPIProxy connects an Envoy-like gateway of namespace ns labelled
// as the proxies of Gateway name are.
func gatewayAPIProxy(t *testing.T, e *env, pod, ns, name string) *adsc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := adsc.Dial(ctx, adsc.Config{
		Address: e.server.GRPCAddr().String(),
		Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: ns,
			Labels: map[string]string{"gateway.networking.k8s.io/gateway-name": name}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func configz(t *testing.T, e *env) debugapi.Configz {
	t.Helper()
	code, body := e.get("/debug/configz")
	var cz debugapi.Configz
	if code != 200 {
		t.Fatalf("configz %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &cz); err != nil {
		t.Fatalf("configz: %v", err)
	}
	return cz
}

// waitConfigz polls /debug/configz (bounded) until cond holds.
func waitConfigz(t *testing.T, e *env, what string, cond func(debugapi.Configz) bool) debugapi.Configz {
	t.Helper()
	var cz debugapi.Configz
	if poll.Wait(func() bool { cz = configz(t, e); return cond(cz) }, poll.Timeout(waitTimeout), poll.Interval(20*time.Millisecond)) != nil {
		b, _ := json.Marshal(cz)
		t.Fatalf("waiting for %s in /debug/configz: %.3000s", what, b)
	}
	return cz
}

// File mode serves Gateway API YAML through the Gateway API conversion:
// the route reaches the Gateway's proxies of its namespace only, status is
// in /debug/configz, a bad route is reported by file, document, object and
// field while the rest is still served, and edits are pushed.
func TestGatewayAPIFileMode(t *testing.T) {
	e := newEnv(t, map[string]string{
		"services.yaml": servicesYAML,
		"gwapi.yaml":    gatewayAPIYAML,
		"route.yaml":    httpRouteYAML("shop", "/api"),
	})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s := waitFor(t, edge, "the HTTPRoute on listener 8080", func(s adsc.State) bool {
		return allACKed(s) && hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/api")
	})
	if got := s.Names(adsc.ListenerType); !slices.Equal(got, []string{"0.0.0.0_8080"}) {
		t.Errorf("listeners %v, want the Gateway's 0.0.0.0_8080", got)
	}
	if s.Clusters["outbound|9080||reviews.default.svc.cluster.local"] == nil {
		t.Errorf("backend cluster missing: %v", s.Names(adsc.ClusterType))
	}

	// The same label in another namespace gets nothing of it.
	other := gatewayAPIProxy(t, e, "edge-1", "other", "edge")
	s = waitFor(t, other, "the other namespace's first response", func(s adsc.State) bool {
		return s.Types[adsc.ListenerType].Version != ""
	})
	if got := s.Names(adsc.ListenerType); len(got) != 0 {
		t.Errorf("a proxy of namespace other got listeners %v", got)
	}

	cz := configz(t, e)
	if cz.GatewayAPI == nil || len(cz.GatewayAPI.Gateways) != 1 || len(cz.GatewayAPI.Routes) != 1 {
		t.Fatalf("configz gatewayAPI = %+v, want one Gateway and one route", cz.GatewayAPI)
	}
	if g := cz.GatewayAPI.Gateways[0]; g.Name != "edge" || !hasCondition(g.Status.Conditions, "Accepted", "True") ||
		len(g.Status.Listeners) != 1 || g.Status.Listeners[0].AttachedRoutes != 1 {
		t.Errorf("Gateway status %+v, want Accepted with one attached route", g)
	}
	if r := cz.GatewayAPI.Routes[0]; r.Kind != "HTTPRoute" || r.Name != "shop" || len(r.Parents) != 1 ||
		!hasCondition(r.Parents[0].Conditions, "Accepted", "True") || !hasCondition(r.Parents[0].Conditions, "ResolvedRefs", "True") {
		t.Errorf("HTTPRoute status %+v, want Accepted and ResolvedRefs", r)
	}
	if len(cz.GatewayAPI.GatewayClasses) != 1 || !hasCondition(cz.GatewayAPI.GatewayClasses[0].Status.Conditions, "Accepted", "True") {
		t.Errorf("GatewayClass status %+v", cz.GatewayAPI.GatewayClasses)
	}

	// A route with an unknown field and one with a bad value: each
	// reported with its file, document, object and field; the good
	// route is still served.
	e.write("bad.yaml", `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: typo, namespace: default}
spec:
  parentRefs: [{name: edge}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /typo}, bogus: 1}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: badvalue, namespace: default}
spec:
  parentRefs: [{name: edge}]
  rules:
  - matches: [{path: {type: Prefix, value: /bad}}]
`)
	cz = waitConfigz(t, e, "both errors of bad.yaml", func(cz debugapi.Configz) bool { return len(cz.Errors) == 2 })
	for i, want := range []struct{ source, field, object string }{
		{"bad.yaml (document 1)", "spec.rules[0].matches[0].bogus", "HTTPRoute default/typo"},
		{"bad.yaml (document 2)", "spec.rules[0].matches[0].path.type", "HTTPRoute default/badvalue"},
	} {
		got := cz.Errors[i]
		if !strings.HasSuffix(got.Source, want.source) || got.Field != want.field || !strings.Contains(got.Message, want.object) {
			t.Errorf("error %d = %+v, want source %s, field %s, naming %s", i, got, want.source, want.field, want.object)
		}
	}

	// A half-written route file (a document that does not parse) keeps
	// the route it had, as for Istio config.
	e.write("route.yaml", httpRouteYAML("shop", "/api")+"---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: [\n")
	waitConfigz(t, e, "the parse error of route.yaml", func(cz debugapi.Configz) bool {
		return slices.ContainsFunc(cz.Errors, func(e debugapi.ConfigzError) bool { return strings.Contains(e.Source, "route.yaml") })
	})
	// A later change, pushed after the broken file was taken in: the
	// route is still there with it.
	e.write("later.yaml", httpRouteYAML("later", "/later"))
	s = waitFor(t, edge, "the later route", func(s adsc.State) bool {
		return hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/later")
	})
	if !hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/api") {
		t.Errorf("the route was withdrawn by a file that does not parse: %s", describe(s))
	}
	e.remove("later.yaml")

	// An edit is pushed; the first route stays served throughout.
	e.write("route.yaml", httpRouteYAML("shop", "/api")+"---\n"+httpRouteYAML("shop2", "/cart"))
	waitFor(t, edge, "the second route", func(s adsc.State) bool {
		return hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/api") && hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/cart")
	})
	e.remove("route.yaml")
	waitFor(t, edge, "both routes gone", func(s adsc.State) bool {
		return !hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/api") && !hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/cart")
	})
}

// A backend is a ServiceEntry host NAME.NS.svc.cluster.local; one that
// appears later resolves the route without touching the route's file.
func TestGatewayAPIFileModeBackendFromServiceEntry(t *testing.T) {
	e := newEnv(t, map[string]string{"gwapi.yaml": gatewayAPIYAML, "route.yaml": httpRouteYAML("shop", "/api")})
	cz := waitConfigz(t, e, "BackendNotFound", func(cz debugapi.Configz) bool {
		return cz.GatewayAPI != nil && len(cz.GatewayAPI.Routes) == 1 && len(cz.GatewayAPI.Routes[0].Parents) == 1 &&
			hasReason(cz.GatewayAPI.Routes[0].Parents[0].Conditions, "ResolvedRefs", "BackendNotFound")
	})
	// The conversion's error names the file and document, the object and
	// the field.
	if !slices.ContainsFunc(cz.Errors, func(e debugapi.ConfigzError) bool {
		return strings.HasSuffix(e.Source, "route.yaml (document 1)") && e.Field == "spec.rules[0].backendRefs[0]" &&
			strings.Contains(e.Message, "HTTPRoute default/shop")
	}) {
		t.Errorf("no error naming route.yaml, the route and the backendRef: %+v", cz.Errors)
	}
	e.write("services.yaml", servicesYAML)
	waitConfigz(t, e, "ResolvedRefs once the ServiceEntry exists", func(cz debugapi.Configz) bool {
		return len(cz.GatewayAPI.Routes) == 1 && hasCondition(cz.GatewayAPI.Routes[0].Parents[0].Conditions, "ResolvedRefs", "True")
	})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	waitFor(t, edge, "the route", func(s adsc.State) bool { return hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/api") })
}

// --gateway-api=false: nothing is converted and configz has no Gateway
// API section; the documents still parse without errors.
func TestGatewayAPIOffInFileMode(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"services.yaml": servicesYAML, "gwapi.yaml": gatewayAPIYAML, "route.yaml": httpRouteYAML("shop", "/api")} {
		serverenv.WriteFile(t, dir+"/"+name, data)
	}
	e := &env{t: t, dir: dir}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, GatewayAPI: bootstrap.GatewayAPIOptions{Disabled: true}})
	cz := configz(t, e)
	if cz.GatewayAPI != nil {
		t.Errorf("configz has a Gateway API section with the Gateway API off: %+v", cz.GatewayAPI)
	}
	for _, c := range cz.Configs {
		if strings.HasSuffix(c.Name, "-gwapi") {
			t.Errorf("generated %s %s/%s with the Gateway API off", c.Kind, c.Namespace, c.Name)
		}
	}
	if len(cz.Errors) != 0 {
		t.Errorf("errors %+v", cz.Errors)
	}
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s := waitFor(t, edge, "a first response", func(s adsc.State) bool { return s.Types[adsc.ListenerType].Version != "" })
	if got := s.Names(adsc.ListenerType); len(got) != 0 {
		t.Errorf("listeners %v with the Gateway API off", got)
	}
}

// The bundled sample (make run) serves its Gateway API example.
func TestGatewayAPISample(t *testing.T) {
	e := &env{t: t, dir: serverenv.CopyDir(t, "../../manifests/samples")}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s := waitFor(t, edge, "the sample HTTPRoute", func(s adsc.State) bool {
		return allACKed(s) && hasPathPrefix(s, "http.8080", "gwapi.example.com:8080", "/reviews")
	})
	if s.Clusters["outbound|9080||productpage.default.svc.cluster.local"] == nil {
		t.Errorf("productpage cluster missing: %v", s.Names(adsc.ClusterType))
	}
	cz := configz(t, e)
	if len(cz.Errors) != 0 {
		t.Errorf("sample errors: %+v", cz.Errors)
	}
	if cz.GatewayAPI == nil || len(cz.GatewayAPI.Routes) != 1 || !hasCondition(cz.GatewayAPI.Routes[0].Parents[0].Conditions, "Accepted", "True") {
		t.Errorf("sample route status: %+v", cz.GatewayAPI)
	}
}

func hasCondition(conds []metav1.Condition, typ, status string) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == typ && string(c.Status) == status })
}

func hasReason(conds []metav1.Condition, typ, reason string) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == typ && c.Reason == reason })
}

// hasPathPrefix reports whether a virtual host of route configuration
// name has the routes of a Gateway API PathPrefix path, as conversion
// serves it by path element: the path exactly, and the prefix "path/".
func hasPathPrefix(s adsc.State, routeName, vhost, path string) bool {
	for _, vh := range s.Routes[routeName].GetVirtualHosts() {
		if vh.GetName() != vhost {
			continue
		}
		exact, prefix := false, false
		for _, r := range vh.GetRoutes() {
			exact = exact || r.GetMatch().GetPath() == path
			prefix = prefix || r.GetMatch().GetPrefix() == path+"/"
		}
		return exact && prefix
	}
	return false
}

// A backendRef of kind Hostname (group networking.istio.io) names a
// ServiceEntry of the folder by host, in file mode as in Kubernetes mode.
func TestGatewayAPIFileModeHostnameBackend(t *testing.T) {
	const external = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: payments, namespace: default}
spec:
  hosts: [payments.example.net]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{number: 443, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.21}]
`
	const route = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: pay, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /pay}}]
    backendRefs: [{group: networking.istio.io, kind: Hostname, name: payments.example.net, port: 443}]
`
	e := newEnv(t, map[string]string{"gwapi.yaml": gatewayAPIYAML, "route.yaml": route, "external.yaml": external})
	waitConfigz(t, e, "ResolvedRefs for the Hostname backend", func(cz debugapi.Configz) bool {
		return cz.GatewayAPI != nil && len(cz.GatewayAPI.Routes) == 1 && len(cz.GatewayAPI.Routes[0].Parents) == 1 &&
			hasCondition(cz.GatewayAPI.Routes[0].Parents[0].Conditions, "ResolvedRefs", "True")
	})
	edge := gatewayAPIProxy(t, e, "edge-1", "default", "edge")
	s := waitFor(t, edge, "the route to the ServiceEntry host", func(s adsc.State) bool {
		return hasPathPrefix(s, "http.8080", "shop.example.com:8080", "/pay")
	})
	if s.Clusters["outbound|443||payments.example.net"] == nil {
		t.Errorf("ServiceEntry cluster missing: %v", s.Names(adsc.ClusterType))
	}
}
