package app

import (
	"flag"
	"io"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/flagref"
)

var updateDocs = flag.Bool("update", false, "rewrite the flag reference in docs/operating.md")

// The reference of every wayfinder command in docs/operating.md is the
// commands' flags, rendered, so the document cannot drift from the tool.
func TestFlagReferenceMatchesTheCommands(t *testing.T) {
	root := NewRootCommand(io.Discard)
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if err := flagref.Check("../../../../docs/operating.md", "wayfinder "+c.Name(), flagref.Render(c), *updateDocs); err != nil {
			t.Error(err)
		}
	}
}
