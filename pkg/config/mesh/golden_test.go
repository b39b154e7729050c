package mesh

import (
	"bytes"
	"flag"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from Parse and delete goldens whose input is gone")

// TestGolden parses each testdata/*.in.yaml as a mesh config file and
// records the merged MeshConfig, the fields Wayfinder ignores, the unknown
// ones, and the warnings. defaults.golden.yaml is istiod's default mesh
// config; istio-configmap.in.yaml is a user's ConfigMap with every
// provider kind the telemetry and ext_authz work reads.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		c, err := Parse(FileSource(file), data)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		var b bytes.Buffer
		golden.Section(t, &b, "mesh", []*meshconfig.MeshConfig{c.Mesh})
		golden.WriteYAML(t, &b, "ignored", nonNil(c.Ignored()))
		golden.WriteYAML(t, &b, "unknown", nonNil(c.Unknown))
		var warnings []string
		for _, w := range c.Warnings {
			warnings = append(warnings, w.Error())
		}
		golden.WriteYAML(t, &b, "warnings", nonNil(warnings))
		return b.Bytes()
	})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
