package blockyaml

import (
	"regexp"
	"strconv"
	"strings"
)

// splitKey splits a mapping line into its key and the rest after ": "
// ("" when the key ends the line or a comment follows it).
func splitKey(text string) (key, rest string, ok bool) {
	var after string
	if text[0] == '"' || text[0] == '\'' {
		if key, after, ok = quoted(text); !ok {
			return "", "", false
		}
	} else {
		n := plainKeyLen(text)
		if n == 0 {
			return "", "", false
		}
		key, after = text[:n], text[n:]
		if !isString(key) {
			return "", "", false // yes:, 1:, <<: and the like are not string keys
		}
	}
	switch {
	case after == ":":
		return key, "", true
	case strings.HasPrefix(after, ": "):
		rest = strings.TrimLeft(after[2:], " ")
		if rest != "" && rest[0] == '#' {
			rest = ""
		}
		return key, rest, true
	}
	return "", "", false
}

// isKeyLine reports whether text (after a "- ") begins with a key.
func isKeyLine(text string) bool {
	_, _, ok := splitKey(text)
	return ok
}

// plainKeyLen is the length of the plain key text starts with: letters,
// digits and "._/-", not starting with "-" or ".".
func plainKeyLen(text string) int {
	n := 0
	for n < len(text) && isKeyChar(text[n]) {
		n++
	}
	if n > 0 && (text[0] == '-' || text[0] == '.') {
		return 0
	}
	return n
}

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-'
}

// quoted reads the single- or double-quoted scalar text starts with and
// returns its value and what follows the closing quote. Double-quoted
// scalars with escapes, and quotes not closed on the line, are declined.
func quoted(text string) (value, after string, ok bool) {
	q := text[0]
	if q == '"' {
		end := strings.IndexByte(text[1:], '"')
		if end < 0 {
			return "", "", false
		}
		value = text[1 : 1+end]
		if strings.IndexByte(value, '\\') >= 0 {
			return "", "", false
		}
		return value, text[2+end:], true
	}
	var b strings.Builder
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			b.WriteByte(text[i])
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), text[i+1:], true
	}
	return "", "", false
}

// endsValue reports whether after, what follows a scalar on its line, is
// nothing or a comment.
func endsValue(after string) bool {
	if after == "" {
		return true
	}
	t := strings.TrimLeft(after, " ")
	return len(t) < len(after) && t[0] == '#'
}

// value decodes the rest of a line after "key: " or "- ": a scalar, a
// flow sequence of scalars, or {}.
func value(text string) (any, bool) {
	switch text[0] {
	case '"', '\'':
		s, after, ok := quoted(text)
		if !ok || !endsValue(after) {
			return nil, false
		}
		return s, true
	case '[':
		return flowSequence(text)
	case '{':
		if strings.HasPrefix(text, "{}") && endsValue(text[2:]) {
			return map[string]any{}, true
		}
		return nil, false
	}
	if i := strings.Index(text, " #"); i >= 0 {
		text = strings.TrimRight(text[:i], " ")
	}
	return plain(text, false)
}

// flowSequence decodes a one-line flow sequence of scalars.
func flowSequence(text string) (any, bool) {
	items := []any{}
	rest := strings.TrimLeft(text[1:], " ")
	if strings.HasPrefix(rest, "]") {
		if !endsValue(rest[1:]) {
			return nil, false
		}
		return items, true
	}
	for {
		var v any
		var ok bool
		if rest == "" {
			return nil, false
		}
		if rest[0] == '"' || rest[0] == '\'' {
			var after string
			if v, after, ok = quoted(rest); !ok {
				return nil, false
			}
			rest = strings.TrimLeft(after, " ")
		} else {
			end := strings.IndexAny(rest, ",]")
			if end < 0 {
				return nil, false
			}
			if v, ok = plain(strings.TrimRight(rest[:end], " "), true); !ok {
				return nil, false
			}
			rest = rest[end:]
		}
		items = append(items, v)
		switch {
		case strings.HasPrefix(rest, ","):
			rest = strings.TrimLeft(rest[1:], " ")
			if rest == "" || rest[0] == ']' || rest[0] == ',' {
				return nil, false // trailing or empty entries: leave them to the full parser
			}
		case strings.HasPrefix(rest, "]"):
			if !endsValue(rest[1:]) {
				return nil, false
			}
			return items, true
		default:
			return nil, false
		}
	}
}

// plain resolves a plain scalar as YAML 1.1 (go-yaml v2) does, for the
// forms whose meaning is certain; anything else is declined.
func plain(s string, inFlow bool) (any, bool) {
	if s == "" {
		return nil, false
	}
	switch s {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null", "~":
		return nil, true
	}
	if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || strings.ContainsAny(s, "[]{}") {
		return nil, false
	}
	if inFlow && strings.ContainsAny(s, ",:#") {
		return nil, false
	}
	if n, ok := smallInt(s); ok {
		return n, true
	}
	if isString(s) {
		return s, true
	}
	return nil, false
}

// smallInt decodes an optionally negative decimal integer of at most 15
// digits without leading zeros (exact in a float64 too).
func smallInt(s string) (int, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) || s == "-0" {
		return 0, false
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// isString reports whether YAML 1.1 certainly reads the plain scalar s as
// the string s.
func isString(s string) bool {
	c := s[0]
	switch {
	case strings.IndexByte("-?:,[]{}#&*!|>'\"%@`<=", c) >= 0:
		return false // indicators, and "<<" (merge) and "=" (value) keys
	case c == '+' || c == '.':
		return false // signs and .5, .inf, .nan
	case c >= '0' && c <= '9':
		return digitString(s)
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return !special[s]
	}
	return true
}

// special are the plain scalars go-yaml v2 reads as booleans or null,
// beyond true, false and null themselves.
var special = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"true": true, "True": true, "TRUE": true,
	"false": true, "False": true, "FALSE": true,
	"on": true, "On": true, "ON": true,
	"off": true, "Off": true, "OFF": true,
	"null": true, "Null": true, "NULL": true, "~": true,
}

// digitString reports whether s, starting with a digit, is a string to
// go-yaml v2: not a timestamp, an integer in any base or a float. Its
// checks are v2's own, in its order; underscores (which v2 drops before
// reading a number) are declined.
func digitString(s string) bool {
	if strings.IndexByte(s, '_') >= 0 || looksLikeTimestamp(s) || strings.HasPrefix(s, "0b") {
		return false
	}
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseUint(s, 0, 64); err == nil {
		return false
	}
	return !yamlFloat.MatchString(s)
}

// yamlFloat is go-yaml v2's pattern of a YAML 1.1 float.
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// looksLikeTimestamp reports whether s starts as every timestamp go-yaml
// v2 reads does: four digits and a "-".
func looksLikeTimestamp(s string) bool {
	return len(s) > 4 && s[4] == '-' && strings.Trim(s[:4], "0123456789") == ""
}
