package route

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// EnvoyMaxRegexProgramSize is Envoy's default limit on a regex's RE2
// program size (runtime key re2.max_program_size.error_level, 100): Envoy
// rejects a route configuration holding a larger regex.
const EnvoyMaxRegexProgramSize = 100

// re2ProgramSize estimates the size RE2's ProgramSize() reports for re, the
// number Envoy compares with its limit.
//
// Go's regexp/syntax parses RE2 syntax into the same tree RE2 builds, but
// compiles it differently: Go's program matches runes, RE2's matches bytes
// (a class of runes becomes a little UTF-8 automaton), and RE2 flattens its
// alternations away afterwards. So the size is computed here from the
// parsed and simplified tree with a cost per construct, following how RE2
// compiles and calibrated against RE2 itself (libre2 20220601; the cases in
// re2size_test.go, measured with RE2::ProgramSize): one instruction per
// byte of a literal, per ASCII range of a class (upper-case ranges folded
// into lower-case ones), per UTF-8 byte range of the rest of a class with
// shared suffixes; two per capture group, one per empty-width assertion
// and per + or ?; and a fixed overhead of fail and match instructions, plus
// the unanchored ".*?" prefix unless the pattern starts with ^. A ^ followed
// by a literal is RE2's "required prefix", matched outside the program.
//
// It is an estimate: RE2 factors some alternations and classes slightly
// differently from Go, and non-ASCII classes are approximated by their
// UTF-8 sequences. Of the 82 measured cases it is exact on 76, one below on
// two, and above on four non-ASCII classes (by 1 and 3; \p{L} and \pN far
// above, over the limit either way). Callers leave estimateMargin for the
// cases below.
func re2ProgramSize(re string) (int, error) {
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return 0, err
	}
	parsed = parsed.Simplify()
	items := []*syntax.Regexp{parsed}
	if parsed.Op == syntax.OpConcat {
		items = parsed.Sub
	}
	overhead := 4 // fail, match, and the unanchored prefix's two
	if len(items) > 0 && isBeginText(items[0]) {
		items = items[1:]
		overhead = 2
		// RE2 strips a literal prefix after ^ and matches it first; the
		// rest is compiled unanchored.
		if len(items) > 0 && items[0].Op == syntax.OpLiteral {
			items = items[1:]
			overhead = 4
		}
	}
	// A trailing $ becomes the program's anchor, not an instruction.
	if n := len(items); n > 0 && items[n-1].Op == syntax.OpEndText {
		items = items[:n-1]
	}
	size := overhead
	for _, it := range items {
		size += re2Cost(it)
	}
	return size, nil
}

// estimateMargin is how far re2ProgramSize may be below RE2's own count on
// the patterns it was checked against.
const estimateMargin = 2

func isBeginText(r *syntax.Regexp) bool {
	return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine && r.Flags&syntax.OneLine != 0
}

// re2Cost is the number of instructions RE2 spends on r once its
// alternations are flattened.
func re2Cost(r *syntax.Regexp) int {
	switch r.Op {
	case syntax.OpLiteral:
		n := 0
		for _, c := range r.Rune {
			// A case-insensitive letter is a class of its case forms,
			// which for k and s include non-ASCII runes (K, ſ).
			if r.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(c) != c {
				n += classCost(foldOrbit(c))
				continue
			}
			n += utf8.RuneLen(c)
		}
		return n
	case syntax.OpCharClass:
		return classCost(r.Rune)
	case syntax.OpAnyCharNotNL:
		return classCost([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		return classCost([]rune{0, unicode.MaxRune})
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 1
	case syntax.OpEmptyMatch:
		return 1
	case syntax.OpCapture:
		return 2 + re2Cost(r.Sub[0])
	case syntax.OpStar:
		return re2Cost(r.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		return re2Cost(r.Sub[0]) + 1
	case syntax.OpRepeat:
		// Simplify expands repeats; what is left is x{0} (nothing).
		if r.Max == 0 {
			return 0
		}
		return r.Min * re2Cost(r.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0
		for _, s := range r.Sub {
			n += re2Cost(s)
		}
		return n
	}
	return 0 // OpNoMatch
}

// foldOrbit is the class a case-insensitive rune stands for.
func foldOrbit(c rune) []rune {
	var out []rune
	for f := c; ; {
		out = append(out, f, f)
		if f = unicode.SimpleFold(f); f == c {
			break
		}
	}
	return canonicalRanges(out)
}

func canonicalRanges(pairs []rune) []rune {
	// Small inputs: sort pairs by start, then merge.
	for i := 2; i < len(pairs); i += 2 {
		for j := i; j > 0 && pairs[j] < pairs[j-2]; j -= 2 {
			pairs[j], pairs[j-2] = pairs[j-2], pairs[j]
			pairs[j+1], pairs[j-1] = pairs[j-1], pairs[j+1]
		}
	}
	var out []rune
	for i := 0; i < len(pairs); i += 2 {
		lo, hi := pairs[i], pairs[i+1]
		if n := len(out); n > 0 && lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], hi)
			continue
		}
		out = append(out, lo, hi)
	}
	return out
}

// classCost counts the byte-range instructions of a class given as sorted
// rune range pairs: one per ASCII range (none for an A-Z range when the
// class holds both cases of its ASCII letters, as RE2 then matches a-z
// case-insensitively), and for the rest one per distinct UTF-8 byte range
// sequence node, suffixes shared. RE2 encodes the whole 80-10FFFF range
// loosely in six instructions.
func classCost(ranges []rune) int {
	foldsASCII := foldsASCII(ranges)
	n := 0
	var wide []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo < utf8.RuneSelf {
			h := min(hi, utf8.RuneSelf-1)
			if !(foldsASCII && lo >= 'A' && h <= 'Z') {
				n++
			}
			lo = utf8.RuneSelf
		}
		if lo <= hi {
			wide = append(wide, lo, hi)
		}
	}
	switch {
	case len(wide) == 0:
		return n
	case len(wide) == 2 && wide[0] == utf8.RuneSelf && wide[1] == unicode.MaxRune:
		return n + 6
	}
	leads := map[string]bool{}
	suffixes := map[string]bool{}
	for i := 0; i+1 < len(wide); i += 2 {
		for _, seq := range utf8Sequences(wide[i], wide[i+1]) {
			key := seqKey(seq)
			leads[key] = true
			for j := 1; j < len(seq); j++ {
				suffixes[seqKey(seq[j:])] = true
			}
		}
	}
	return n + len(leads) + len(suffixes)
}

// foldsASCII reports whether the class holds the upper-case form of each
// lower-case ASCII letter it holds, and the other way round.
func foldsASCII(ranges []rune) bool {
	has := func(c rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= c && c <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for c := 'a'; c <= 'z'; c++ {
		if has(c) != has(c-'a'+'A') {
			return false
		}
	}
	return true
}

type byteRange struct{ lo, hi byte }

func seqKey(seq []byteRange) string {
	var b strings.Builder
	for _, r := range seq {
		b.WriteByte(r.lo)
		b.WriteByte(r.hi)
	}
	return b.String()
}

// utf8Sequences splits the rune range lo-hi (both at least 0x80) into
// sequences of byte ranges whose cross products are exactly its UTF-8
// encodings, the way UTF-8 automata are built.
func utf8Sequences(lo, hi rune) [][]byteRange {
	var out [][]byteRange
	var split func(lo, hi rune)
	split = func(lo, hi rune) {
		if lo > hi {
			return
		}
		// Surrogates have no UTF-8 encoding.
		if lo <= 0xDFFF && hi >= 0xD800 {
			split(lo, min(hi, 0xD7FF))
			split(max(lo, 0xE000), hi)
			return
		}
		// Keep one encoded length per range.
		for _, b := range []rune{0x7FF, 0xFFFF} {
			if lo <= b && hi > b {
				split(lo, b)
				split(b+1, hi)
				return
			}
		}
		n := utf8.RuneLen(lo)
		// Split until every continuation byte spans its full 80-BF range
		// below the first byte that differs.
		for i := 1; i < n; i++ {
			m := rune(1)<<(6*i) - 1
			if lo&^m != hi&^m {
				if lo&m != 0 {
					split(lo, lo|m)
					split((lo|m)+1, hi)
					return
				}
				if hi&m != m {
					split(lo, (hi&^m)-1)
					split(hi&^m, hi)
					return
				}
			}
		}
		var a, b [utf8.UTFMax]byte
		utf8.EncodeRune(a[:], lo)
		utf8.EncodeRune(b[:], hi)
		seq := make([]byteRange, n)
		for i := range n {
			seq[i] = byteRange{a[i], b[i]}
		}
		out = append(out, seq)
	}
	split(lo, hi)
	return out
}
