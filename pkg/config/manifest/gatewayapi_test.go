package manifest_test

import (
	"strings"
	"testing"

	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

const gatewayAPIDocs = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: wayfinder, namespace: ignored}
spec: {controllerName: wayfinder.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop}
spec:
  parentRefs: [{name: edge}]
  rules:
  - matches: [{path: {type: Exact, value: /cart}}]
    backendRefs: [{name: web, port: 80, weight: 3}]
status:
  parents: []
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs}
spec: {hosts: [a.example.com]}
`

func TestParseGatewayAPI(t *testing.T) {
	objs, errs := manifest.ParseAll("gw.yaml", []byte(gatewayAPIDocs), manifest.Options{})
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(objs.Configs) != 1 || objs.Configs[0].Name != "vs" {
		t.Fatalf("Istio configs %v, want the VirtualService", objs.Configs)
	}
	if len(objs.GatewayAPI) != 2 {
		t.Fatalf("%d Gateway API objects, want 2", len(objs.GatewayAPI))
	}
	gc, ok := objs.GatewayAPI[0].Object.(*gw.GatewayClass)
	if !ok || gc.Namespace != "" || gc.Spec.ControllerName != "wayfinder.io/gateway-controller" || objs.GatewayAPI[0].Key() != "GatewayClass /wayfinder" {
		t.Errorf("GatewayClass = %#v (key %s), want cluster-scoped with its controllerName", objs.GatewayAPI[0].Object, objs.GatewayAPI[0].Key())
	}
	r, ok := objs.GatewayAPI[1].Object.(*gw.HTTPRoute)
	if !ok || r.Namespace != "default" || r.Generation != 1 || objs.GatewayAPI[1].Source != "gw.yaml (document 2)" {
		t.Fatalf("HTTPRoute = %#v from %s, want namespace default, generation 1, document 2", objs.GatewayAPI[1].Object, objs.GatewayAPI[1].Source)
	}
	if w := r.Spec.Rules[0].BackendRefs[0].Weight; w == nil || *w != 3 || *r.Spec.Rules[0].Matches[0].Path.Value != "/cart" {
		t.Errorf("HTTPRoute spec not decoded: %+v", r.Spec.Rules)
	}
	// Parse keeps its contract: Istio config only, and no error for the
	// Gateway API documents.
	if cfgs, errs := manifest.Parse("gw.yaml", []byte(gatewayAPIDocs), manifest.Options{}); len(cfgs) != 1 || len(errs) != 0 {
		t.Errorf("Parse = %d configs, %v", len(cfgs), errs)
	}
	// Same content, same sum; a change, another.
	again, _ := manifest.ParseAll("other.yaml", []byte(gatewayAPIDocs), manifest.Options{})
	changed, _ := manifest.ParseAll("gw.yaml", []byte(strings.Replace(gatewayAPIDocs, "/cart", "/basket", 1)), manifest.Options{})
	if again.GatewayAPI[1].Sum != objs.GatewayAPI[1].Sum || changed.GatewayAPI[1].Sum == objs.GatewayAPI[1].Sum {
		t.Error("Sum does not follow the content")
	}
}

// Bad Gateway API documents are refused, naming file, document, object
// and field, as the API server's schema validation would refuse them; the
// other documents are still parsed.
func TestParseGatewayAPIErrors(t *testing.T) {
	route := func(rules string) string {
		return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: shop}\nspec:\n  parentRefs: [{name: edge}]\n  rules:\n" + rules
	}
	for _, tc := range []struct {
		name, doc, field, msg string
	}{
		{"unknown field", route("  - matches: [{path: {type: Exact, value: /a}, bogus: 1}]\n"), "spec.rules[0].matches[0].bogus", "unknown field"},
		{"bad enum", route("  - matches: [{path: {type: Prefix, value: /a}}]\n"), "spec.rules[0].matches[0].path.type", "Prefix is not one of Exact, PathPrefix, RegularExpression"},
		{"out of range", route("  - backendRefs: [{name: web, port: 70000}]\n"), "spec.rules[0].backendRefs[0].port", "more than the maximum 65535"},
		{"wrong type", route("  - backendRefs: [{name: web, port: eighty}]\n"), "spec.rules[0].backendRefs[0].port", "must be a number"},
		{"pattern", route("  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: 'bad header', value: x}]}}]\n"),
			"spec.rules[0].filters[0].requestHeaderModifier.set[0].name", "does not match the pattern"},
		{"required", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: r, namespace: shop}\nspec: {gatewayClassName: x}\n",
			"spec.listeners", "required field is missing"},
		{"top-level unknown field", "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: r}\nspec: {controllerName: a.io/b}\nextra: 1\n",
			"extra", "unknown field"},
		{"version", "apiVersion: gateway.networking.k8s.io/v9\nkind: HTTPRoute\nmetadata: {name: r}\nspec: {}\n", "apiVersion", `version "v9" of HTTPRoute is not supported`},
		{"kind", "apiVersion: gateway.networking.k8s.io/v1\nkind: UDPRoute\nmetadata: {name: r}\nspec: {}\n", "apiVersion", "not a Gateway API kind Wayfinder reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: ok}\nspec: {controllerName: a.io/b}\n"
			objs, errs := manifest.ParseAll("bad.yaml", []byte(good+"---\n"+tc.doc), manifest.Options{})
			if len(objs.GatewayAPI) != 1 || objs.GatewayAPI[0].Object.GetName() != "ok" {
				t.Errorf("the good document was not kept: %v", objs.GatewayAPI)
			}
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			e := errs[0]
			if e.Source != "bad.yaml (document 2)" || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error = %q (field %q), want document 2, field %q, %q", e.Error(), e.Field, tc.field, tc.msg)
			}
			if tc.field != "apiVersion" && !strings.Contains(e.Message, "/r)") {
				t.Errorf("error %q does not name the object", e.Error())
			}
		})
	}
}
