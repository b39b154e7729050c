// Package flagref renders a command's flags as a Markdown reference and
// keeps that reference inside a document between two markers, so that
// docs/ say exactly what the binaries take: the commands' tests render
// the flags again and fail when the document differs (go test -update
// rewrites it).
package flagref

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Render returns a Markdown table of cmd's own and inherited flags, in the
// order the command defines them (related flags are defined together), with
// each flag's type, default and usage. Hidden flags are left out.
func Render(cmd *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s`\n\n", cmd.UseLine())
	b.WriteString("| flag | type | default | what |\n|---|---|---|---|\n")
	write := func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		typ := f.Value.Type()
		def := f.DefValue
		if def == "" || def == "[]" {
			def = ""
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, typ, def, escape(f.Usage))
	}
	inherited := cmd.InheritedFlags()
	own := cmd.Flags()
	sorted := own.SortFlags
	own.SortFlags = false
	own.VisitAll(func(f *pflag.Flag) {
		if inherited.Lookup(f.Name) == nil {
			write(f)
		}
	})
	own.SortFlags = sorted
	inherited.VisitAll(write)
	return b.String()
}

func escape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// Markers returns the lines that open and close the generated block named
// name.
func Markers(name string) (begin, end string) {
	return "<!-- BEGIN GENERATED " + name + ": edit the flags, then run make docs -->",
		"<!-- END GENERATED " + name + " -->"
}

// Replace returns doc with the block named name replaced by body, or an
// error if the markers are missing or out of order.
func Replace(doc, name, body string) (string, error) {
	begin, end := Markers(name)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < 0 || j < i {
		return "", fmt.Errorf("markers %q ... %q not found in order", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + body + doc[j:], nil
}

// Check compares the block named name in the file at path with body. With
// update it rewrites the file instead. It returns an error saying how to
// regenerate when they differ.
func Check(path, name, body string, update bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	want, err := Replace(string(data), name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if want == string(data) {
		return nil
	}
	if update {
		return os.WriteFile(path, []byte(want), 0o644)
	}
	return fmt.Errorf("%s: the %s reference differs from the command's flags; run make docs (or this test with -update)", path, name)
}
