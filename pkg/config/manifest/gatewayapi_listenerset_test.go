package manifest_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// A file may hold ListenerSets and BackendTLSPolicies (standard channel,
// v1), checked against their CRD schemas like the other kinds, with their
// status dropped; and the experimental HTTPRoute fields Wayfinder serves
// (retry, sessionPersistence), since file mode checks against the
// experimental channel's schemas. What no channel serves is still refused,
// naming the field.
func TestParseListenerSetAndExperimentalFields(t *testing.T) {
	const docs = `
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: shop, namespace: team}
spec:
  parentRef: {name: edge, namespace: infra}
  listeners:
  - {name: http, port: 8080, protocol: HTTP, hostname: shop.example.com}
status:
  conditions: [{type: Accepted, status: "True", reason: Accepted, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: tls, namespace: team}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation: {hostname: web.example.com, wellKnownCACertificates: System}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: team}
spec:
  parentRefs: [{kind: ListenerSet, name: shop}]
  rules:
  - backendRefs: [{name: web, port: 80}]
    retry: {codes: [503], attempts: 2, backoff: 100ms}
    sessionPersistence: {sessionName: shop, type: Cookie}
`
	objs, errs := manifest.ParseAll("sets.yaml", []byte(docs), manifest.Options{})
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(objs.GatewayAPI) != 3 {
		t.Fatalf("%d Gateway API objects, want 3", len(objs.GatewayAPI))
	}
	ls, ok := objs.GatewayAPI[0].Object.(*gw.ListenerSet)
	if !ok || ls.Spec.ParentRef.Name != "edge" || len(ls.Spec.Listeners) != 1 || ls.Spec.Listeners[0].Port != 8080 {
		t.Fatalf("ListenerSet = %#v", objs.GatewayAPI[0].Object)
	}
	if len(ls.Status.Conditions) != 0 || objs.GatewayAPI[0].Key() != "ListenerSet team/shop" {
		t.Errorf("ListenerSet status %v kept, key %s", ls.Status, objs.GatewayAPI[0].Key())
	}
	if _, ok := objs.GatewayAPI[1].Object.(*gw.BackendTLSPolicy); !ok {
		t.Errorf("BackendTLSPolicy = %#v", objs.GatewayAPI[1].Object)
	}
	r, ok := objs.GatewayAPI[2].Object.(*gw.HTTPRoute)
	if !ok || r.Spec.Rules[0].Retry == nil || r.Spec.Rules[0].SessionPersistence == nil {
		t.Errorf("HTTPRoute retry and sessionPersistence not decoded: %#v", objs.GatewayAPI[2].Object)
	}

	const bad = `
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: shop, namespace: team}
spec:
  parentRef: {name: edge}
  listeners:
  - {name: http, port: 70000, protocol: HTTP}
`
	_, errs = manifest.ParseAll("bad.yaml", []byte(bad), manifest.Options{})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.listeners[0].port") || !strings.Contains(errs[0].Error(), "ListenerSet team/shop") {
		t.Errorf("errors %v, want one naming spec.listeners[0].port of ListenerSet team/shop", errs)
	}
}

// The experimental CRDs file mode checks against are those of the very
// kinds manifests/crds/gateway-api installs (make gateway-api-crds copies
// both), so that no kind is served on a cluster and refused in a file.
func TestExperimentalCRDsMatchStandardKinds(t *testing.T) {
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	std, exp := names("../../../manifests/crds/gateway-api"), names("../../../manifests/crds/gateway-api-experimental")
	if !slices.Equal(std, exp) {
		t.Errorf("manifests/crds/gateway-api holds %v, gateway-api-experimental %v", std, exp)
	}
	for _, f := range []string{"gateway-api", "gateway-api-experimental"} {
		data, err := os.ReadFile("../../../manifests/crds/" + f + "/kustomization.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range std {
			if n != "kustomization.yaml" && !strings.Contains(string(data), "- "+n+"\n") {
				t.Errorf("%s/kustomization.yaml does not list %s", f, n)
			}
		}
	}
}
