package blockyaml

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// scalars are plain and quoted scalars in the subset, and tricky ones
// whose YAML 1.1 meanings differ in ways Decode must get right or decline.
var scalars = []string{
	"web", "a.example.com", "/api/v1", "250ms", "1h30m", "1.5s", "10.0.0.1", "10.0.0.0/8", "1.2.3",
	"0", "7", "-3", "8080", "true", "false", "null", "~", "a:b", "a#b", "it's", `"quoted"`, `"a # b"`, `"a: b"`,
	`''`, `'it''s'`, `"yes"`, `'1e3'`, "{}", "[]", "[a, b]", "[1, true, '2', \"x\"]", "Ready", "0.0.0.0",
}

var tricky = []string{
	"017", "0x1F", "1e3", "1_000", "1.5", ".5", "-0", "+1", "123456789012345", "1234567890123456",
	"true", "false", "True", "yes", "no", "on", "Off", "y", "n", "null", "~", "Null",
	"2024-01-01", "2024-01-01T10:00:00Z", "12:30", "a: b", "a:b", "a #b", "a#b", "it's", "-a", "<<", "=",
	`"quoted"`, `"a # b"`, `"a: b"`, `''`, `'it''s'`, `"yes"`, `'1e3'`, `"\n"`, `"unclosed`, "{}", "[]", "{a: b}",
	"[a, b]", "[1, yes, '2']", "[a, ]", "[[a]]", "&x a", "*x", "!!str 1", "|", ">", "é", "a\tb",
}

var keys = []string{"name", "port", "hosts", "a.b/c", "_x", `"q k"`, "'s'", "spec", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12"}

var trickyKeys = []string{"on", "yes", "1", "-x", ".x", "<<", "Kind", "y", "a b", "a#b", "2024-01-01"}

type gen struct {
	r *rand.Rand
	b strings.Builder
}

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// scalar picks a scalar, a tricky one now and then.
func (g *gen) scalar() string {
	if g.r.IntN(15) == 0 {
		return g.pick(tricky)
	}
	return g.pick(scalars)
}

func (g *gen) key() string {
	if g.r.IntN(15) == 0 {
		return g.pick(trickyKeys)
	}
	return g.pick(keys)
}

func (g *gen) comment() string {
	if g.r.IntN(6) == 0 {
		return " # note"
	}
	return ""
}

// mapping writes n entries at indent; first, if set, is the text already
// written before the first key on its line ("- ").
func (g *gen) mapping(indent, depth int, first string) {
	n := 1 + g.r.IntN(4)
	for i := range n {
		if i == 0 && first != "" {
			g.b.WriteString(first)
		} else {
			g.b.WriteString(strings.Repeat(" ", indent))
		}
		g.b.WriteString(g.key() + ":")
		g.value(indent, depth)
	}
}

// value writes what follows "key:" or "-".
func (g *gen) value(indent, depth int) {
	switch k := g.r.IntN(10); {
	case depth > 2 || k < 5:
		g.b.WriteString(" " + g.scalar() + g.comment() + "\n")
	case k < 7:
		g.b.WriteString(g.comment() + "\n")
		g.mapping(indent+1+g.r.IntN(3), depth+1, "")
	default:
		g.b.WriteString(g.comment() + "\n")
		in := indent
		if g.r.IntN(2) == 0 {
			in += 2
		}
		g.sequence(in, depth+1)
	}
}

func (g *gen) sequence(indent, depth int) {
	for range 1 + g.r.IntN(3) {
		pad := strings.Repeat(" ", indent)
		switch g.r.IntN(4) {
		case 0:
			g.b.WriteString(pad + "- " + g.scalar() + g.comment() + "\n")
		case 1:
			g.mapping(indent+2, depth+1, pad+"- ")
		case 2:
			g.b.WriteString(pad + "-")
			g.value(indent, depth)
		default:
			if g.r.IntN(4) == 0 {
				g.b.WriteString(pad + "- - " + g.scalar() + "\n")
			} else {
				g.b.WriteString(pad + "- " + g.scalar() + "\n")
			}
		}
	}
}

// TestDecodeGeneratedDocuments compares Decode with the full parser on
// random documents mixing the subset's shapes with its near misses.
func TestDecodeGeneratedDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	accepted, total := 0, 20000
	for range total {
		g := gen{r: r}
		g.mapping(0, 0, "")
		if agrees(t, []byte(g.b.String())) {
			accepted++
		}
	}
	t.Logf("%d of %d generated documents in the subset", accepted, total)
	if accepted < total/5 {
		t.Fatalf("only %d of %d generated documents accepted: the comparison covers too little", accepted, total)
	}
}
