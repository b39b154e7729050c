package blockyaml

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// agrees checks Decode against sigs.k8s.io/yaml's strict conversion: when
// Decode accepts doc, the full parser must accept it too and give the same
// JSON. It reports whether Decode accepted.
func agrees(t *testing.T, doc []byte) bool {
	t.Helper()
	v, ok := Decode(doc)
	if !ok {
		return false
	}
	want, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		t.Fatalf("Decode accepted a document the full parser refuses (%v):\n%s", err, doc)
	}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Decode differs from the full parser on:\n%s\ngot  %s\nwant %s", doc, got, want)
	}
	return true
}

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// repoDocuments is every YAML document in the repository that is config
// (manifests, samples, test inputs), one by one; golden outputs (Envoy
// resources as the tests print them) are not config and are left out.
func repoDocuments(t testing.TB) [][]byte {
	t.Helper()
	var docs [][]byte
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) || strings.HasSuffix(path, ".golden.yaml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, doc := range separator.Split(string(data), -1) {
			docs = append(docs, []byte(doc))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestDecodeMatchesTheFullParser(t *testing.T) {
	docs := repoDocuments(t)
	accepted := 0
	for _, doc := range docs {
		if agrees(t, doc) {
			accepted++
		}
	}
	t.Logf("%d of %d repository documents in the subset", accepted, len(docs))
	// Most config is plain block YAML; if this falls, Decode has stopped
	// doing its job (every document would take the slow path).
	if accepted < len(docs)/2 {
		t.Fatalf("only %d of %d repository documents accepted", accepted, len(docs))
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, doc := range []string{
		"a: b\n",
		"apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: x # the name\n  labels:\n    app.kubernetes.io/name: web\nspec:\n  hosts: [\"a.example.com\", 'b.example.com', c.example.com]\n  http:\n  - match:\n    - uri:\n        prefix: /api\n    timeout: 250ms\n    route:\n    - destination:\n        host: web\n        port:\n          number: 8080\n      weight: -3\n",
		"a:\n- 1\n- true\n- false\n- null\n- ~\n-\n- x\nb: {}\nc: []\nd:\n",
		"a:\n  -\n    b: c\n  - - \n",
		"key: 'it''s' # quoted\nother: \"a # b: c\"\nurl: http://x:80/y\nip: 10.0.0.1\ncidr: 10.0.0.0/8\nd: 1h30m\nv: 1.2.3\n",
		"\"quoted key\": 1\n'single': 2\n",
		"# comment\n\na:    # after a key\n  b: 0\n",
	} {
		if !agrees(t, []byte(doc)) {
			// "- - " is outside the subset; it must be declined, not
			// misread, so only the others need to be accepted.
			if strings.Contains(doc, "- - ") {
				continue
			}
			t.Errorf("declined:\n%s", doc)
		}
	}
}

// TestDecodeDeclines lists documents whose YAML 1.1 meaning is not a
// plain string, or that need the full parser's errors.
func TestDecodeDeclines(t *testing.T) {
	for _, doc := range []string{
		"on: x\n", "a: yes\n", "a: On\n", "a: y\n", "a: NULL\n", "a: TRUE\n",
		"a: 1e3\n", "a: 0x1F\n", "a: 017\n", "a: 1_000\n", "a: 2024-01-01\n", "a: .5\n", "a: .inf\n", "a: 1.5\n",
		"a: 1234567890123456\n", "a: -0\n", "a: +1\n", "1: x\n", "<<: x\n",
		"a: &x b\n", "a: *x\n", "a: !!str 1\n", "a: |\n  b\n", "a: >\n  b\n",
		"a: b\n  c\n", "a: \"b\n  c\"\n", "a: \"\\n\"\n", "a: {b: c}\n", "a: [[b]]\n", "a: [b, ]\n",
		"a: b\na: c\n", "a: b: c\n", "a:\n  - b\n  c: d\n", "a: b\n- c\n", "- a\n", "  a: b\n",
		"a:\tb\n", "a: b\r\n", "a: é\n", "%YAML 1.1\na: b\n", "a: b\n...\n", "? a\n: b\n",
		"a: [b: c]\n", "a: b #\n  c\n", "a:\n b: c\n  d: e\n",
	} {
		if _, ok := Decode([]byte(doc)); ok {
			t.Errorf("accepted, want declined:\n%s", doc)
		}
		// Whatever the full parser makes of it, Decode said nothing.
	}
}

func FuzzDecode(f *testing.F) {
	for _, doc := range repoDocuments(f) {
		f.Add(doc)
	}
	f.Add([]byte("a:\n- b: 1\n  c: [x, 'y', \"z\"]\n-\n  d: 1h\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		agrees(t, doc)
	})
}
