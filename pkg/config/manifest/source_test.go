package manifest

import "testing"

func TestSplitDocumentSource(t *testing.T) {
	for _, tc := range []struct {
		src, file string
		doc       int
	}{
		{DocumentSource("a.yaml", 12), "a.yaml", 12},
		{"dir/a (document 3).yaml (document 1)", "dir/a (document 3).yaml", 1},
		{"a.yaml", "a.yaml", 0},
		{"a.yaml (document x)", "a.yaml (document x)", 0},
	} {
		if f, d := SplitDocumentSource(tc.src); f != tc.file || d != tc.doc {
			t.Errorf("SplitDocumentSource(%q) = %q, %d; want %q, %d", tc.src, f, d, tc.file, tc.doc)
		}
	}
}
