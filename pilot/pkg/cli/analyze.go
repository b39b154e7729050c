package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
)

// AnalyzeReport is the body of `wayfinder analyze -o json`.
type AnalyzeReport struct {
	Errors   int                `json:"errors"`
	Warnings int                `json:"warnings"`
	Findings []analysis.Finding `json:"findings"`
}

// WriteFindings prints findings one a line, compiler style
// ("file:line: error: Kind ns/name: field: message"), or as JSON or YAML.
// It returns ErrFindings when any finding is an error, so the command
// exits 1.
func WriteFindings(w io.Writer, findings []analysis.Finding, output string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	r := AnalyzeReport{Findings: findings}
	if r.Findings == nil {
		r.Findings = []analysis.Finding{}
	}
	for _, f := range findings {
		if f.Severity == analysis.SeverityError {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	if output == OutputJSON || output == OutputYAML {
		if err := writeStructured(w, r, output); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintln(w, FormatFinding(f))
		}
		fmt.Fprintf(w, "%d errors, %d warnings\n", r.Errors, r.Warnings)
	}
	if r.Errors > 0 {
		return ErrFindings
	}
	return nil
}

// FormatFinding renders one finding on one line.
func FormatFinding(f analysis.Finding) string {
	var b strings.Builder
	switch {
	case f.File != "" && f.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", f.File, f.Line)
	case f.File != "":
		b.WriteString(f.File + ": ")
	case f.Source != "":
		b.WriteString(f.Source + ": ")
	}
	b.WriteString(f.Severity + ": ")
	if f.Kind != "" {
		fmt.Fprintf(&b, "%s %s/%s: ", f.Kind, f.Namespace, f.Name)
	}
	if f.Field != "" {
		b.WriteString(f.Field + ": ")
	}
	b.WriteString(f.Message)
	return b.String()
}
