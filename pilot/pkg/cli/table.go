package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeTable writes rows under header with aligned columns.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// Output formats of commands that have a table form.
const (
	OutputTable = ""
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// checkOutput rejects an unknown -o value.
func checkOutput(o string) error {
	switch o {
	case OutputTable, "table", OutputJSON, OutputYAML:
		return nil
	}
	return fmt.Errorf("-o %q: want json or yaml (or nothing for a table)", o)
}
