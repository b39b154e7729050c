package authz

import (
	"fmt"
	"slices"
	"strings"
)

// defaultTrustDomain stands for the local trust domain and its aliases in
// principals, as in istiod (constants.DefaultClusterLocalDomain).
const defaultTrustDomain = "cluster.local"

// trustDomains is istiod's trustdomain.Bundle: the mesh's trust domain
// first, then its aliases, all treated as one.
type trustDomains []string

// replaceAliases is istiod's Bundle.ReplaceTrustDomainAliases: a principal
// "TD/ns/NS/sa/SA" whose trust domain is the mesh's, one of its aliases or
// cluster.local is expanded to one principal per trust domain; others are
// kept as written.
func (t trustDomains) replaceAliases(principals []string) []string {
	out := []string{}
	for _, p := range principals {
		parts := strings.Split(p, "/")
		if len(parts) != 5 || parts[0] == "*" {
			out = append(out, p)
			continue
		}
		td := parts[0]
		if !tdMatchesAny(td, t) && td != defaultTrustDomain {
			out = append(out, p)
			continue
		}
		var expanded []string
		for _, alias := range t {
			np := p
			if !suffixMatch(alias, td) {
				np = fmt.Sprintf("%s/%s", alias, strings.Join(parts[1:], "/"))
			}
			if !slices.Contains(expanded, np) {
				expanded = append(expanded, np)
			}
		}
		out = append(out, expanded...)
	}
	return out
}

// expandAliases is istiod's Bundle.ExpandTrustDomainAliases for the
// trustDomains field: a value naming one of the trust domains stands for
// all of them.
func (t trustDomains) expandAliases(values []string) []string {
	var out []string
	for _, v := range values {
		if slices.Contains(t, v) {
			out = append(out, t...)
		} else {
			out = append(out, v)
		}
	}
	// istiod's slices.FilterDuplicates: first occurrence wins.
	seen := map[string]bool{}
	kept := out[:0]
	for _, v := range out {
		if !seen[v] {
			seen[v] = true
			kept = append(kept, v)
		}
	}
	return kept
}

// tdMatchesAny is istiod's trustdomain stringMatch: exact, "*", or a
// prefix or suffix wildcard on either side.
func tdMatchesAny(a string, list []string) bool {
	for _, s := range list {
		if a == s || s == "*" || prefixMatch(a, s) || prefixMatch(s, a) || suffixMatch(a, s) || suffixMatch(s, a) {
			return true
		}
	}
	return false
}

func prefixMatch(a, pattern string) bool {
	p, ok := strings.CutSuffix(pattern, "*")
	return ok && strings.HasPrefix(a, p)
}

func suffixMatch(a, pattern string) bool {
	p, ok := strings.CutPrefix(pattern, "*")
	return ok && strings.HasSuffix(a, p)
}
