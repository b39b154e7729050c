package mesh

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListReadFields: docs/mesh-config.md has a row for every field
// Wayfinder reads, and no row for a field it does not.
func TestDocsListReadFields(t *testing.T) {
	data, err := os.ReadFile("../../../docs/mesh-config.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if f, ok := strings.CutPrefix(line, "| `"); ok {
			if end := strings.Index(f, "`"); end > 0 {
				rows[f[:end]] = true
			}
		}
	}
	for _, f := range ReadFields() {
		if !rows[f] {
			t.Errorf("docs/mesh-config.md has no row for %s", f)
		}
		delete(rows, f)
	}
	for f := range rows {
		t.Errorf("docs/mesh-config.md has a row for %s, which Wayfinder does not read", f)
	}
}
