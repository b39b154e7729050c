package analysis

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// Finding is one problem, located for a person or a CI job to act on.
type Finding struct {
	// Severity is "error" (the object or part of it is not served) or
	// "warning" (served, but probably not as meant).
	Severity string `json:"severity"`
	// File and Line locate the offending field (or, failing that, its
	// document) when the object came from a file.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Source is where the object came from when it is not a file
	// ("kube://namespace/name").
	Source    string `json:"source,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Field     string `json:"field,omitempty"`
	Message   string `json:"message"`
}

// Severities of a Finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Findings turns errors into findings, locating each in contents (file
// name to bytes, as Load returns them) by document and field path.
func Findings(errs []*config.Error, contents map[string][]byte) []Finding {
	docs := map[string][]document{}
	out := make([]Finding, 0, len(errs))
	for _, e := range errs {
		f := Finding{Severity: SeverityError, Kind: kindName(e.Key.Kind), Namespace: e.Key.Namespace, Name: e.Key.Name,
			Field: e.Field, Message: e.Message}
		if e.Warning {
			f.Severity = SeverityWarning
		}
		file, n := manifest.SplitDocumentSource(e.Source)
		data, ok := contents[file]
		if !ok {
			f.Source = e.Source
			out = append(out, f)
			continue
		}
		f.File = file
		if _, split := docs[file]; !split {
			docs[file] = splitDocuments(data)
		}
		if n >= 1 && n <= len(docs[file]) {
			f.Line = docs[file][n-1].line(e.Field)
		}
		out = append(out, f)
	}
	return out
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// separator is manifest's document separator.
var separator = regexp.MustCompile(`(?m)^---\s*$`)

// document is one non-empty YAML document of a file and the line it
// starts on.
type document struct {
	text      string
	startLine int // 1-based line of the document's first line
	root      *yaml.Node
	parsed    bool
}

// splitDocuments splits data as manifest.Parse does, numbering only the
// documents that hold more than comments.
func splitDocuments(data []byte) []document {
	s := string(data)
	var out []document
	start := 0
	bounds := separator.FindAllStringIndex(s, -1)
	bounds = append(bounds, []int{len(s), len(s)})
	for _, b := range bounds {
		text := s[start:b[0]]
		if hasContent(text) {
			out = append(out, document{text: text, startLine: strings.Count(s[:start], "\n") + 1})
		}
		start = b[1]
	}
	return out
}

func hasContent(doc string) bool {
	for line := range strings.SplitSeq(doc, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// line returns the file line of field ("spec.http[0].route[1].weight")
// in the document: the deepest part of the path that exists, or the
// document's first line with content.
func (d *document) line(field string) int {
	if !d.parsed {
		d.parsed = true
		var n yaml.Node
		if yaml.Unmarshal([]byte(d.text), &n) == nil && len(n.Content) > 0 {
			d.root = n.Content[0]
		}
	}
	if d.root == nil {
		return d.startLine + firstContentLine(d.text) - 1
	}
	node, line := d.root, d.root.Line
	for _, step := range parsePath(field) {
		next, keyLine := child(node, step)
		if next == nil {
			break
		}
		node, line = next, keyLine
	}
	return d.startLine + line - 1
}

func firstContentLine(text string) int {
	for i, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return i + 1
		}
	}
	return 1
}

// step is one part of a field path: a key, or an index into a list.
type step struct {
	key   string
	index int // -1 for a key
}

// parsePath splits "spec.http[0].route[1].weight" into steps.
func parsePath(field string) []step {
	var out []step
	for part := range strings.SplitSeq(field, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			out = append(out, step{key: name, index: -1})
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				break
			}
			if i, err := strconv.Atoi(idx); err == nil {
				out = append(out, step{index: i})
			} else {
				out = append(out, step{key: strings.Trim(idx, `"'`), index: -1})
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

// child returns n's child for s and the line that names it (the key's
// line for a mapping entry, the item's for a list element).
func child(n *yaml.Node, s step) (*yaml.Node, int) {
	switch {
	case s.index >= 0 && n.Kind == yaml.SequenceNode && s.index < len(n.Content):
		c := n.Content[s.index]
		return c, c.Line
	case s.index < 0 && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == s.key {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	}
	return nil, 0
}
