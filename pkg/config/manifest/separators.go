package manifest

import "strings"

// separators finds the document separators of text: exactly the matches of
// the regular expression (?m)^---\s*$, which this replaces because it was
// a fifth of parsing a large file. A match is "---" at a line's start and
// the whitespace after it, up to the end of the text or the last newline
// in that whitespace (the newline itself not included; \s is [\t\n\f\r ]).
func separators(text string) [][2]int {
	var out [][2]int
	for ls := 0; ls < len(text); {
		if strings.HasPrefix(text[ls:], "---") {
			j := ls + 3
			k := j
			for k < len(text) && strings.IndexByte("\t\n\f\r ", text[k]) >= 0 {
				k++
			}
			end := k
			if k < len(text) {
				end = j + strings.LastIndexByte(text[j:k], '\n')
			}
			if end >= j {
				out = append(out, [2]int{ls, end})
				ls = end
				if ls > 0 && text[ls-1] == '\n' {
					continue // the match ended at a line's start
				}
			}
		}
		nl := strings.IndexByte(text[ls:], '\n')
		if nl < 0 {
			break
		}
		ls += nl + 1
	}
	return out
}
