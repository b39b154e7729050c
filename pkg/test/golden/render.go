package golden

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// Section writes "name:" and msgs as a YAML list, each message in its
// protojson form, so goldens read like the config Envoy would dump.
func Section[M proto.Message](t *testing.T, b *bytes.Buffer, name string, msgs []M) {
	t.Helper()
	items := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		js, err := protojson.Marshal(m)
		if err != nil {
			t.Fatalf("%s: protojson: %v", name, err)
		}
		items = append(items, js)
	}
	WriteYAML(t, b, name, items)
}

// WriteYAML writes "name:" and v, marshaled to JSON and then YAML.
func WriteYAML(t *testing.T, b *bytes.Buffer, name string, v any) {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if bytes.Equal(y, []byte("[]\n")) {
		b.WriteString(name + ": []\n")
		return
	}
	b.WriteString(name + ":\n")
	b.Write(y)
}
