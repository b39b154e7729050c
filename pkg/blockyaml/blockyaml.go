// Package blockyaml decodes the plain block-style YAML that config files
// are nearly always written in, several times faster than a full YAML
// parser, and declines everything else.
//
// Decode's answer, when it gives one, is exactly the value that
// sigs.k8s.io/yaml's strict conversion (go-yaml v2, YAML 1.1) decodes the
// document to, so json.Marshal of it is byte for byte that conversion's
// JSON. Anything outside the subset, or anything whose YAML 1.1 meaning
// is not plainly a string, an integer, true, false or null, is declined
// (ok false) and the caller uses the full parser, which also reports
// errors. The subset:
//
//   - a document that is a block mapping starting at column 0;
//   - block mappings and block sequences nested by spaces, including a
//     sequence at its key's indentation and a mapping begun on a "- " line;
//   - keys that are quoted, or plain keys of letters, digits and "._/-"
//     that YAML 1.1 reads as strings;
//   - single-line plain, single-quoted and double-quoted (no escapes)
//     scalars; flow sequences of such scalars on one line; [] and {};
//   - comments, whole-line or after a space.
//
// Declined: tabs, carriage returns, control and non-ASCII bytes, anchors,
// aliases, tags, directives, block scalars (| and >), multi-line scalars,
// flow mappings, nested flow collections, merge keys, duplicate keys,
// and plain scalars YAML 1.1 might read as something other than a string,
// a small decimal integer, a boolean or null (1e3, 0x1F, 1_000, 2024-01-01,
// .5, yes, On, ...). Durations such as 250ms and 1h30m, and addresses such
// as 10.0.0.1 and 10.0.0.0/8, are strings, as v2 reads them. The strings
// of the result share one copy of doc.
//
// TestDecodeMatchesTheFullParser and FuzzDecode hold Decode to that:
// whatever it accepts converts to the same JSON as sigs.k8s.io/yaml.
package blockyaml

import (
	"strings"
)

// Decode returns doc's top-level mapping, or ok false when doc is outside
// the subset (see the package comment).
func Decode(doc []byte) (v map[string]any, ok bool) {
	lines, ok := split(doc)
	if !ok || len(lines) == 0 || lines[0].indent != 0 || isItem(lines[0].text) {
		return nil, false
	}
	p := parser{lines: lines}
	m, ok := p.mapping(0)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	return m, true
}

// line is a line with content: its indentation and the rest, right-trimmed
// of spaces (its comment, if any, is still there).
type line struct {
	indent int
	text   string
}

// split checks doc's bytes and returns its lines with content. It declines
// anything that needs a full parser at the byte or line level.
func split(doc []byte) ([]line, bool) {
	for _, c := range doc {
		if (c < 0x20 && c != '\n') || c >= 0x7f {
			return nil, false // tabs, CR, control and non-ASCII bytes
		}
	}
	s := string(doc)
	lines := make([]line, 0, strings.Count(s, "\n")+1)
	for raw := range strings.SplitSeq(s, "\n") {
		text := strings.TrimLeft(raw, " ")
		if text == "" || text[0] == '#' {
			continue
		}
		indent := len(raw) - len(text)
		if indent == 0 && (text[0] == '%' || strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...")) {
			return nil, false // directives and document markers
		}
		lines = append(lines, line{indent: indent, text: strings.TrimRight(text, " ")})
	}
	return lines, true
}

type parser struct {
	lines []line
	i     int
}

// isItem reports whether text starts a block sequence item.
func isItem(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

// node parses the block starting at the current line, at indent.
func (p *parser) node(indent int) (any, bool) {
	if isItem(p.lines[p.i].text) {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

// nested parses what follows a key or "-" with nothing after it on its
// line: a deeper block, a sequence at the key's own indentation (sameIndent
// items, for mapping keys), or nothing (null).
func (p *parser) nested(indent int, sameIndentItems bool) (any, bool) {
	if p.i == len(p.lines) {
		return nil, true
	}
	next := p.lines[p.i]
	switch {
	case next.indent > indent:
		return p.node(next.indent)
	case next.indent == indent && sameIndentItems && isItem(next.text):
		return p.sequence(indent)
	}
	return nil, true
}

// mapping parses block mapping entries at indent.
func (p *parser) mapping(indent int) (map[string]any, bool) {
	m := map[string]any{}
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && !isItem(p.lines[p.i].text) {
		key, rest, ok := splitKey(p.lines[p.i].text)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		p.i++
		var v any
		if rest == "" {
			if v, ok = p.nested(indent, true); !ok {
				return nil, false
			}
		} else {
			if v, ok = value(rest); !ok || p.deeper(indent) {
				return nil, false // a continuation line would make a multi-line scalar
			}
		}
		m[key] = v
	}
	if p.deeper(indent) || (p.i < len(p.lines) && p.lines[p.i].indent == indent) {
		return nil, false // a stray deeper line, or an item where a key belongs
	}
	return m, true
}

// sequence parses block sequence items at indent.
func (p *parser) sequence(indent int) ([]any, bool) {
	var items []any
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && isItem(p.lines[p.i].text) {
		text := p.lines[p.i].text
		rest := strings.TrimLeft(text[1:], " ")
		var v any
		var ok bool
		switch {
		case rest == "" || rest[0] == '#':
			p.i++
			if v, ok = p.nested(indent, false); !ok {
				return nil, false
			}
		case isItem(rest):
			return nil, false // "- - x": a compact nested sequence
		case isKeyLine(rest):
			// A mapping begun on the item's line: it continues at the
			// column its first key starts at.
			col := indent + len(text) - len(rest)
			p.lines[p.i] = line{indent: col, text: rest}
			if v, ok = p.mapping(col); !ok {
				return nil, false
			}
		default:
			p.i++
			if v, ok = value(rest); !ok || p.deeper(indent) {
				return nil, false
			}
		}
		items = append(items, v)
	}
	if p.deeper(indent) {
		return nil, false
	}
	return items, true
}

// deeper reports whether the current line is indented beyond indent.
func (p *parser) deeper(indent int) bool {
	return p.i < len(p.lines) && p.lines[p.i].indent > indent
}
