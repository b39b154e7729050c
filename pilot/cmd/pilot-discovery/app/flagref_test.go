package app

import (
	"flag"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/flagref"
)

var updateDocs = flag.Bool("update", false, "rewrite the flag reference in docs/running.md")

// The flag reference in docs/running.md is the discovery command's flags,
// rendered: a flag added, renamed or given a new default without the
// document following fails here.
func TestFlagReferenceMatchesTheCommand(t *testing.T) {
	root := NewRootCommand()
	cmd, _, err := root.Find([]string{"discovery"})
	if err != nil {
		t.Fatal(err)
	}
	if err := flagref.Check("../../../../docs/running.md", "pilot-discovery discovery", flagref.Render(cmd), *updateDocs); err != nil {
		t.Error(err)
	}
}
