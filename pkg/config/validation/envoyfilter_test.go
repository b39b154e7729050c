package validation_test

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/envoyfilter/*.golden.yaml")

// TestEnvoyFilterGolden validates each EnvoyFilter of
// testdata/envoyfilter/*.in.yaml, parsed as a user's file: the fields each
// must report are in its wayfinder.test/want annotation (none: valid), and
// every message, in order, is in the golden beside it. The cases follow
// istiod 1.29's TestValidateEnvoyFilter
// (pkg/config/validation/envoyfilter/envoyfilter_test.go) where istiod
// rejects, and Wayfinder's stricter rules beyond it (envoyfilter.go).
func TestEnvoyFilterGolden(t *testing.T) {
	golden.Run(t, "testdata/envoyfilter", *update, func(t *testing.T, file string, data []byte) []byte {
		configs, errs := manifest.Parse(file, data, manifest.Options{})
		for _, e := range errs {
			t.Fatalf("parse: %v", e)
		}
		var b bytes.Buffer
		for _, c := range configs {
			if c.Kind != schema.EnvoyFilter {
				t.Fatalf("%s: a %v in the EnvoyFilter cases", c.Name, c.Kind)
			}
			err := validation.Validate(c)
			t.Run(c.Name, func(t *testing.T) {
				checkErrors(t, err, wantFields(c), c.Annotations[messageAnnotation])
			})
			fmt.Fprintf(&b, "%s:\n", c.Name)
			if err == nil {
				b.WriteString("  valid\n")
				continue
			}
			for _, fe := range fieldErrors(t, err) {
				fmt.Fprintf(&b, "  %s: %s\n", fe.Field, fe.Message)
			}
		}
		return b.Bytes()
	})
}

func wantFields(c config.Config) []string {
	var want []string
	for _, line := range strings.Split(c.Annotations[wantAnnotation], "\n") {
		if line = strings.TrimSpace(line); line != "" {
			want = append(want, line)
		}
	}
	return want
}

// A typed nil spec, an empty one, a null patch and a spec of another
// type are reported (or accepted), never a panic.
func TestEnvoyFilterShapes(t *testing.T) {
	meta := config.Meta{Kind: schema.EnvoyFilter, Namespace: "ns", Name: "ef"}
	for _, tc := range []struct {
		name string
		spec proto.Message
		want []string
	}{
		{"typed nil", (*networking.EnvoyFilter)(nil), nil},
		{"empty", &networking.EnvoyFilter{}, nil},
		{"null patch", &networking.EnvoyFilter{ConfigPatches: []*networking.EnvoyFilter_EnvoyConfigObjectPatch{nil}}, []string{"spec.configPatches[0]"}},
		{"wrong type", &networking.Gateway{}, []string{"spec"}},
		{"nil", nil, []string{"spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := ""
			if len(tc.want) > 0 {
				msg = " "
			}
			checkErrors(t, validation.Validate(config.Config{Meta: meta, Spec: tc.spec}), tc.want, msg)
		})
	}
}

// istiod's warnings (its ValidateEnvoyFilter WrapWarning cases) name their
// fields and do not make Validate fail.
func TestEnvoyFilterWarnings(t *testing.T) {
	data := []byte(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: warned, namespace: edge}
spec:
  workloadSelector: {}
  configPatches:
  - applyTo: LISTENER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}
  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.http_connection_manager, subFilter: {name: envoy.router}}}}}
    patch: {operation: INSERT_BEFORE, value: {name: envoy.filters.http.cors, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors}}}
  - applyTo: LISTENER
    patch:
      operation: ADD
      value:
        name: l
        filter_chains: [{filters: [{name: envoy.filters.network.tcp_proxy}]}]
  - applyTo: HTTP_FILTER
    match: {context: WAYPOINT, listener: {filterChain: {filter: {name: envoy.http_connection_manager}}}}
    patch: {operation: REMOVE}
  - applyTo: HTTP_FILTER
    patch: {operation: ADD, value: {name: envoy.filters.http.cors}}
`)
	configs, errs := manifest.Parse("warned.yaml", data, manifest.Options{})
	if len(errs) > 0 || len(configs) != 1 {
		t.Fatalf("parse: %v", errs)
	}
	if err := validation.Validate(configs[0]); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var got []string
	for _, w := range validation.EnvoyFilterWarnings(configs[0].Spec.(*networking.EnvoyFilter)) {
		got = append(got, w.Field+": "+w.Message)
	}
	want := []string{
		"spec.workloadSelector: workload selector without labels: the EnvoyFilter applies to every gateway of its namespace",
		"spec.configPatches[0].match.listener.filterChain.filter: a filter match has no effect with applyTo LISTENER",
		`spec.configPatches[1].match.listener.filterChain.filter.name: deprecated filter name "envoy.http_connection_manager"; use "envoy.filters.network.http_connection_manager"`,
		`spec.configPatches[1].match.listener.filterChain.filter.subFilter.name: deprecated filter name "envoy.router"; use "envoy.filters.http.router"`,
		"spec.configPatches[4].patch.value: filter(s) named without typed_config, a form Envoy is removing: envoy.filters.http.cors",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
