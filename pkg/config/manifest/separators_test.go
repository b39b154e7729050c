package manifest

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSeparatorsMatchTheRegexp holds separators to the regular expression
// it replaces, on texts built from the pieces that matter to it.
func TestSeparatorsMatchTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`(?m)^---\s*$`)
	pieces := []string{"---", "-", "\n", " ", "\t", "\r", "\f", "a", "--- a", "#", "\v"}
	r := rand.New(rand.NewPCG(1, 2))
	matched := 0
	for range 50000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		var want [][2]int
		for _, loc := range re.FindAllStringIndex(text, -1) {
			want = append(want, [2]int{loc[0], loc[1]})
		}
		if got := separators(text); !slices.Equal(got, want) {
			t.Fatalf("separators(%q) = %v, the regexp finds %v", text, got, want)
		}
		matched += len(want)
	}
	if matched == 0 {
		t.Fatal("no text had a separator: the comparison proved nothing")
	}
}
