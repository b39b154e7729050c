package mesh

import (
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzParse: no input panics Parse; an accepted config is deterministic
// and its merged mesh config validates.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/istio-configmap.in.yaml", "testdata/warnings.in.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("defaultConfig:\n  tracing: {zipkin: {address: 'a:1'}}\n  proxyHeaders: {server: {disabled: true}}"))
	f.Add([]byte("extensionProviders: [{name: a, zipkin: {port: 1}, datadog: {}}]"))
	f.Add([]byte("- 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(FileSource("fuzz.yaml"), data)
		if err != nil {
			return
		}
		again, err := Parse(FileSource("fuzz.yaml"), data)
		if err != nil || !proto.Equal(c.Mesh, again.Mesh) {
			t.Fatalf("second parse differs: %v", err)
		}
		if errs, _, _ := validate(c.Mesh, func(int) string { return "p" }); len(errs) != 0 {
			t.Fatalf("accepted config fails validation: %v", errs)
		}
	})
}
