package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/wayfinder-dev/wayfinder/pkg/blockyaml"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// jsonSpec decodes spec the way parseIstio does without specFromTree:
// normalizeTree's JSON through protojson.
func jsonSpec(spec any, msg proto.Message) error {
	js, err := normalizeTree(spec, msg.ProtoReflect().Descriptor())
	if err != nil {
		return err
	}
	return protojson.Unmarshal(js, msg)
}

// treeSpecAgrees runs specFromTree on a spec and, on a copy of it, the
// JSON way, and fails the test when the tree decoder took a spec that
// protojson decodes differently or refuses. It reports whether the tree
// decoder took the spec.
func treeSpecAgrees(t *testing.T, name string, kind schema.Kind, doc []byte) bool {
	t.Helper()
	tree, ok := blockyaml.Decode(doc)
	if !ok || tree["spec"] == nil {
		t.Fatalf("%s: not a blockyaml document with a spec", name)
	}
	s := schema.ByKind(kind)
	fromTree := s.NewSpec()
	took := specFromTree(tree["spec"], fromTree.ProtoReflect())
	again, _ := blockyaml.Decode(doc) // normalizeTree rewrites its tree in place
	fromJSON := s.NewSpec()
	err := jsonSpec(again["spec"], fromJSON)
	if took && err != nil {
		t.Errorf("%s: the tree decoder took a spec the JSON way refuses (%v)", name, err)
	}
	if took && !proto.Equal(fromTree, fromJSON) {
		t.Errorf("%s: decoded differently:\ntree %v\njson %v", name, fromTree, fromJSON)
	}
	return took
}

// TestTreeSpecDecodesAsProtojson covers each kind of value the tree
// decoder takes, and each it leaves to protojson: for the first the
// result must equal protojson's, for the second it must decline so that
// protojson's error (or its own reading) is what the user gets.
func TestTreeSpecDecodesAsProtojson(t *testing.T) {
	vs := func(http string) []byte {
		return []byte("kind: VirtualService\nspec:\n  hosts: [a.example.com]\n  http:\n  - route:\n    - destination:\n        host: a\n" + http)
	}
	indent := func(spec string) string {
		return "  " + strings.ReplaceAll(strings.TrimSuffix(spec, "\n"), "\n", "\n  ") + "\n"
	}
	se := func(spec string) []byte {
		return []byte("kind: ServiceEntry\nspec:\n  hosts: [s.example.com]\n" + indent(spec))
	}
	dr := func(spec string) []byte { return []byte("kind: DestinationRule\nspec:\n  host: a\n" + indent(spec)) }
	cases := []struct {
		name string
		kind schema.Kind
		doc  []byte
		took bool
	}{
		{"Go duration", schema.VirtualService, vs("    timeout: 1m30s\n"), true},
		{"Go duration under a second", schema.VirtualService, vs("    timeout: 250ms\n"), true},
		{"negative Go duration", schema.VirtualService, vs("    timeout: \"-1.5s5ms\"\n"), true},
		{"protojson duration", schema.VirtualService, vs("    timeout: 5s\n"), true},
		{"protojson duration with nanoseconds", schema.VirtualService, vs("    timeout: 1.000000001s\n"), true},
		{"negative protojson duration", schema.VirtualService, vs("    timeout: \"-0.5s\"\n"), true},
		{"protojson duration past Go's range", schema.VirtualService, vs("    timeout: 315576000000s\n"), true},
		{"duration past protojson's range", schema.VirtualService, vs("    timeout: 315576000001s\n"), false},
		{"duration with a leading zero", schema.VirtualService, vs("    timeout: \".5s\"\n"), false},
		{"duration with ten fractional digits", schema.VirtualService, vs("    timeout: 0.0000000001s\n"), false},
		{"duration without whole seconds", schema.VirtualService, vs("    timeout: \".5s\"\n"), false},
		{"bad duration", schema.VirtualService, vs("    timeout: 5 s\n"), false},
		{"duration as a number", schema.VirtualService, vs("    timeout: 5\n"), false},
		{"bool wrapper", schema.VirtualService, vs("    retries:\n      attempts: 3\n      retryRemoteLocalities: true\n"), true},
		{"double", schema.VirtualService, vs("    mirrorPercentage:\n      value: 50\n"), true},
		{"unknown field", schema.VirtualService, vs("    timeoutt: 5s\n"), false},
		{"field under both its names", schema.DestinationRule, dr("exportTo: [a]\nexport_to: [b]\n"), false},
		{"proto name alone", schema.DestinationRule, dr("export_to: [a]\n"), true},
		{"two fields of a oneof", schema.VirtualService, []byte("kind: VirtualService\nspec:\n  http:\n  - match:\n    - uri:\n        exact: /a\n        prefix: /b\n"), false},
		{"one field of a oneof", schema.VirtualService, []byte("kind: VirtualService\nspec:\n  http:\n  - match:\n    - uri:\n        prefix: /b\n      headers:\n        x-a:\n          exact: \"1\"\n"), true},
		{"null field", schema.VirtualService, vs("    retries:\n"), false},
		{"null list item", schema.ServiceEntry, se("addresses:\n- \n"), false},
		{"enum by name", schema.ServiceEntry, se("resolution: DNS\nlocation: MESH_INTERNAL\n"), true},
		{"enum by number", schema.ServiceEntry, se("resolution: 2\n"), true},
		{"unknown enum name", schema.ServiceEntry, se("resolution: DNSS\n"), false},
		{"uint32 in range", schema.ServiceEntry, se("ports:\n- number: 4294967295\n  name: a\n"), true},
		{"uint32 out of range", schema.ServiceEntry, se("ports:\n- number: 4294967296\n  name: a\n"), false},
		{"negative uint32", schema.ServiceEntry, se("ports:\n- number: -1\n  name: a\n"), false},
		{"string map", schema.ServiceEntry, se("endpoints:\n- address: 10.0.0.1\n  labels:\n    app: a\n  ports:\n    http: 8080\n"), true},
		{"number where a string belongs", schema.ServiceEntry, se("endpoints:\n- address: 10\n"), false},
		{"string where a number belongs", schema.ServiceEntry, se("ports:\n- number: \"80\"\n  name: a\n"), false},
		{"list where an object belongs", schema.DestinationRule, dr("trafficPolicy: [a]\n"), false},
		{"uint32 wrapper", schema.DestinationRule, dr("trafficPolicy:\n  outlierDetection:\n    consecutive5xxErrors: 5\n    interval: 10s\n"), true},
	}
	for _, c := range cases {
		if got := treeSpecAgrees(t, c.name, c.kind, c.doc); got != c.took {
			t.Errorf("%s: tree decoder took it: %v, want %v", c.name, got, c.took)
		}
	}
}

// TestTreeSpecLeavesWellKnownTypesToProtojson: protojson's own JSON forms
// of Struct, Value, Any and the like are not decoded from the tree.
func TestTreeSpecLeavesWellKnownTypesToProtojson(t *testing.T) {
	if specFromTree(map[string]any{"a": "b"}, (&structpb.Struct{}).ProtoReflect()) {
		t.Fatal("the tree decoder took a google.protobuf.Struct")
	}
}

// TestTreeSpecTakesTheBenchWorkload: the workload the file-mode bench
// reads (tools/workload) is decoded from the tree throughout, not through
// JSON.
func TestTreeSpecTakesTheBenchWorkload(t *testing.T) {
	for kind, doc := range workloadDocs() {
		if !treeSpecAgrees(t, kind.String(), kind, doc) {
			t.Errorf("the tree decoder declined:\n%s", doc)
		}
	}
}

// workloadDocs are one document of each kind tools/workload writes.
func workloadDocs() map[schema.Kind][]byte {
	return map[schema.Kind][]byte{
		schema.Gateway:        workload.Gateway(),
		schema.ServiceEntry:   workload.ServiceEntry(7, 3),
		schema.VirtualService: workload.VirtualService(7, 10, "/api/v2"),
	}
}

// FuzzTreeSpecMatchesJSON decodes arbitrary documents' specs with the
// tree decoder and the JSON way, as every kind: whenever the tree decoder
// takes a spec, protojson must take it too and give the same message.
//
//	go test -run='^$' -fuzz=FuzzTreeSpecMatchesJSON -fuzztime=60s ./pkg/config/manifest
func FuzzTreeSpecMatchesJSON(f *testing.F) {
	seeds, _ := filepath.Glob("../validation/testdata/*.yaml")
	seeds = append(seeds, "../../../manifests/samples/*.yaml")
	for _, pattern := range seeds {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			for _, doc := range strings.Split(string(data), "\n---\n") {
				f.Add([]byte(doc))
			}
		}
	}
	for _, doc := range workloadDocs() {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		tree, ok := blockyaml.Decode(doc)
		if !ok || tree["spec"] == nil {
			return
		}
		for _, s := range schema.All() {
			fromTree := s.NewSpec()
			if !specFromTree(tree["spec"], fromTree.ProtoReflect()) {
				continue
			}
			// The JSON way rewrites its tree: decode a copy.
			raw, err := json.Marshal(tree["spec"])
			if err != nil {
				t.Fatalf("%v: the tree decoder took a spec json.Marshal refuses: %v", s.Kind, err)
			}
			var spec any
			if err := json.Unmarshal(raw, &spec); err != nil {
				t.Fatal(err)
			}
			fromJSON := s.NewSpec()
			if err := jsonSpec(spec, fromJSON); err != nil {
				t.Fatalf("%v: the tree decoder took a spec protojson refuses: %v\n%s", s.Kind, err, raw)
			}
			if !proto.Equal(fromTree, fromJSON) {
				t.Fatalf("%v: decoded differently:\ntree %v\njson %v", s.Kind, fromTree, fromJSON)
			}
		}
	})
}

// TestParsedSpecsDoNotKeepTheirDocuments: blockyaml's strings are slices
// of the document's text, so a spec holding them would keep every
// document it came from in memory. Documents padded with 64 KiB of
// comments are parsed and their objects kept: the heap must not keep the
// padding.
func TestParsedSpecsDoNotKeepTheirDocuments(t *testing.T) {
	const docs, padding = 100, 64 << 10
	pad := strings.Repeat("# "+strings.Repeat("x", 62)+"\n", padding/64)
	var objs []Objects
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range docs {
		doc := fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: v%d\n  labels:\n    app: a\nspec:\n%s  hosts: [a%d.example.com]\n  http:\n  - headers:\n      request:\n        set:\n          x-a: b\n    route:\n    - destination:\n        host: a\n", i, pad, i)
		o, errs := ParseAll("f.yaml", []byte(doc), Options{})
		if len(errs) > 0 || len(o.Configs) != 1 {
			t.Fatalf("parsed %d objects, errors %v", len(o.Configs), errs)
		}
		objs = append(objs, o)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if kept > docs*padding/4 {
		t.Fatalf("%d objects keep %d KiB of heap: their documents' text (%d KiB) is still referenced", docs, kept>>10, docs*padding>>10)
	}
	runtime.KeepAlive(objs)
	t.Logf("%d objects keep %d KiB", docs, kept>>10)
}
