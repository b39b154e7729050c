package file

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// EnvoyFilters in a folder (networking.istio.io/v1alpha3, the only
// version Istio's CRD serves) are read and checked by the real validator:
// the valid one is served with its patch value intact, the invalid one is
// reported with its file, document and field and not served, and one written
// as networking.istio.io/v1 is refused naming the version.
func TestEnvoyFiltersInFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"filters/ratelimit.yaml": `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: local-ratelimit, namespace: istio-system}
spec:
  workloadSelector: {labels: {istio: ingressgateway}}
  priority: 10
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: GATEWAY
      listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}
    patch:
      operation: INSERT_BEFORE
      value:
        name: envoy.filters.http.local_ratelimit
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
          stat_prefix: http_local_rate_limiter
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: broken, namespace: edge}
spec:
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: REMOVE}
  - applyTo: HTTP_FILTER
    patch:
      operation: REPLACE
`,
		"v1.yaml": `apiVersion: networking.istio.io/v1
kind: EnvoyFilter
metadata: {name: wrong-version, namespace: edge}
spec: {}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(c.List(schema.EnvoyFilter, "")), []string{"EnvoyFilter istio-system/local-ratelimit"}; !slices.Equal(got, want) {
		t.Fatalf("List(EnvoyFilter) = %q, want %q", got, want)
	}
	ef := c.Get(schema.EnvoyFilter, "istio-system", "local-ratelimit")
	spec, ok := ef.Spec.(*networking.EnvoyFilter)
	if !ok || spec.GetPriority() != 10 || spec.GetWorkloadSelector().GetLabels()["istio"] != "ingressgateway" {
		t.Fatalf("local-ratelimit = %v", ef.Spec)
	}
	tc := spec.GetConfigPatches()[0].GetPatch().GetValue().GetFields()["typed_config"].GetStructValue()
	if tc.GetFields()["@type"].GetStringValue() != "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit" {
		t.Fatalf("patch value lost its typed config: %v", spec.GetConfigPatches()[0].GetPatch().GetValue())
	}

	var broken, version []string
	for _, e := range c.ConfigErrors() {
		switch {
		case e.Key.String() == "EnvoyFilter edge/broken":
			broken = append(broken, e.Field)
			if !strings.Contains(e.Error(), "filters/ratelimit.yaml (document 2)") {
				t.Errorf("error %q does not name its file and document", e.Error())
			}
		case strings.Contains(e.Error(), "v1.yaml"):
			version = append(version, e.Error())
		default:
			t.Errorf("unexpected error %v", e)
		}
	}
	if want := []string{"spec.configPatches[1].patch.value"}; !slices.Equal(broken, want) {
		t.Errorf("broken's errors name %q, want %q", broken, want)
	}
	if len(version) != 1 || !strings.Contains(version[0], `version "v1" of EnvoyFilter is not supported`) {
		t.Errorf("the v1 EnvoyFilter's errors = %q", version)
	}
}
