package analysis

import (
	"regexp"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// Matching an AuthorizationPolicy's paths and hosts against the routes a
// gateway serves, to find paths no route serves. Every helper answers
// "could some request match both?" and, when unsure, says yes: a path is
// reported only when it certainly cannot reach a route.

// pathKind is how istiod's pathGenerator translates one `paths` entry.
type pathKind int

const (
	pathAny      pathKind = iota // "*": every path
	pathExact                    // "/a/b"
	pathPrefix                   // "/a/*": paths starting with "/a/"
	pathSuffix                   // "*.css": paths ending with ".css"
	pathTemplate                 // "/a/{*}/b", "/a/{**}": Envoy's uri_template
)

// policyPath is one `to.operation.paths` entry as istiod matches it.
type policyPath struct {
	kind  pathKind
	value string          // the exact path, prefix or suffix
	toks  []templateToken // for pathTemplate
}

// parsePolicyPath reads p as istiod's pathGenerator does: a value with
// "{*}" or "{**}" is a path template (PathTemplateMatcher, where "{*}"
// becomes Envoy's "*" and "{**}" its "**", and a "*" or "**" already
// there is kept as that operator); otherwise "*" is any path, "*x" a
// suffix, "x*" a prefix, anything else exact (StringMatcherWithPrefix).
func parsePolicyPath(p string) policyPath {
	switch {
	case strings.Contains(p, "{*}") || strings.Contains(p, "{**}"):
		return policyPath{kind: pathTemplate, value: p, toks: tokenizeTemplate(strings.NewReplacer("{*}", "*", "{**}", "**").Replace(p))}
	case p == "*":
		return policyPath{kind: pathAny}
	case strings.HasPrefix(p, "*"):
		return policyPath{kind: pathSuffix, value: strings.TrimPrefix(p, "*")}
	case strings.HasSuffix(p, "*"):
		return policyPath{kind: pathPrefix, value: strings.TrimSuffix(p, "*")}
	default:
		return policyPath{kind: pathExact, value: p}
	}
}

// lower is p matched case-insensitively (for routes with ignoreUriCase).
func (p policyPath) lower() policyPath {
	out := policyPath{kind: p.kind, value: strings.ToLower(p.value)}
	for _, t := range p.toks {
		t.lit = strings.ToLower(t.lit)
		out.toks = append(out.toks, t)
	}
	return out
}

// templateOp is one part of an Envoy uri_template.
type templateOp int

const (
	opLiteral templateOp = iota
	opOne                // "*": within one path segment
	opAny                // "**": anything, "/" included
)

type templateToken struct {
	op  templateOp
	lit string
}

// tokenizeTemplate splits an Envoy uri_template ("/a/*/b/**") into
// literals and operators. The matching here is wider than Envoy's, never
// narrower, so that no served path is taken for unserved: "*" matches
// any characters but "/" (Envoy: at least one, of its pchar set), and
// "**" with everything after it matches anything (Envoy: pchar and "/",
// then the rest of the template, which istiod's validation allows only
// as the last operator).
func tokenizeTemplate(t string) []templateToken {
	var out []templateToken
	for t != "" {
		i := strings.IndexByte(t, '*')
		switch {
		case i < 0:
			out = append(out, templateToken{op: opLiteral, lit: t})
			t = ""
		case i > 0:
			out = append(out, templateToken{op: opLiteral, lit: t[:i]})
			t = t[i:]
		case strings.HasPrefix(t, "**"):
			return append(out, templateToken{op: opAny})
		default:
			out = append(out, templateToken{op: opOne})
			t = t[1:]
		}
	}
	return out
}

// templateMatches reports whether the template toks matches s whole or,
// with prefix, whether some path starting with s matches it (with the
// wider operators of tokenizeTemplate).
func templateMatches(toks []templateToken, s string, prefix bool) bool {
	if len(s) == 0 {
		if prefix {
			return true
		}
		for _, t := range toks {
			if t.op == opLiteral {
				return false
			}
		}
		return true
	}
	if len(toks) == 0 {
		return false
	}
	t := toks[0]
	if t.op == opLiteral {
		n := min(len(t.lit), len(s))
		if s[:n] != t.lit[:n] {
			return false
		}
		if n < len(t.lit) {
			return prefix // s ends inside the literal
		}
		return templateMatches(toks[1:], s[n:], prefix)
	}
	if t.op == opAny {
		return true // the rest of the template matches anything
	}
	for n := 0; n <= len(s); n++ {
		if n > 0 && s[n-1] == '/' {
			return false
		}
		if templateMatches(toks[1:], s[n:], prefix) {
			return true
		}
	}
	return false
}

// routeURI is one route match's URI condition.
type routeURI struct {
	kind  string // "exact", "prefix", "regex" or "" (every path)
	value string
	fold  bool // ignoreUriCase
}

func (u routeURI) String() string {
	if u.kind == "" {
		return "every path"
	}
	return u.kind + " " + u.value
}

// routeURIs returns the URI conditions of a VirtualService HTTP route,
// one per match; a route without matches, or with a match without uri,
// serves every path.
func routeURIs(r *networking.HTTPRoute) []routeURI {
	if len(r.GetMatch()) == 0 || r.GetDelegate() != nil {
		return []routeURI{{}}
	}
	var out []routeURI
	for _, m := range r.GetMatch() {
		u := routeURI{fold: m.GetIgnoreUriCase()}
		switch v := m.GetUri().GetMatchType().(type) {
		case *networking.StringMatch_Exact:
			u.kind, u.value = "exact", v.Exact
		case *networking.StringMatch_Prefix:
			u.kind, u.value = "prefix", v.Prefix
		case *networking.StringMatch_Regex:
			u.kind, u.value = "regex", v.Regex
		}
		out = append(out, u)
	}
	return out
}

// pathOverlaps reports whether some request path could match both the
// policy path p and the route condition u.
func pathOverlaps(p policyPath, u routeURI) bool {
	if u.kind == "" || p.kind == pathAny {
		return true
	}
	v := u.value
	if u.fold {
		p, v = p.lower(), strings.ToLower(v)
	}
	if u.kind == "regex" {
		// Only an exact path is checked against a regex (Envoy's
		// safe_regex matches the whole path); anything else may overlap.
		if p.kind != pathExact {
			return true
		}
		re, err := regexp.Compile("^(?:" + v + ")$")
		return err != nil || re.MatchString(p.value)
	}
	exact := u.kind == "exact"
	switch p.kind {
	case pathExact:
		if exact {
			return p.value == v
		}
		return strings.HasPrefix(p.value, v)
	case pathPrefix:
		if exact {
			return strings.HasPrefix(v, p.value)
		}
		return strings.HasPrefix(v, p.value) || strings.HasPrefix(p.value, v)
	case pathSuffix:
		if exact {
			return strings.HasSuffix(v, p.value)
		}
		return true // any prefix can be followed by the suffix
	case pathTemplate:
		return templateMatches(p.toks, v, !exact)
	}
	return true
}

// hostsOverlap reports whether some Host could match both an
// AuthorizationPolicy `hosts` entry (exact, "*", "*suffix" or "prefix*",
// case-insensitive; a port is ignored) and a VirtualService host (exact,
// "*" or "*.suffix").
func hostsOverlap(policy, route string) bool {
	p, r := strings.ToLower(stripPort(policy)), strings.ToLower(route)
	if p == "*" || r == "*" {
		return true
	}
	routeSuffix, routeWild := strings.CutPrefix(r, "*")
	switch {
	case strings.HasSuffix(p, "*"):
		return routeWild || strings.HasPrefix(r, strings.TrimSuffix(p, "*"))
	case strings.HasPrefix(p, "*"):
		suffix := strings.TrimPrefix(p, "*")
		if routeWild {
			return strings.HasSuffix(routeSuffix, suffix) || strings.HasSuffix(suffix, routeSuffix)
		}
		return strings.HasSuffix(r, suffix)
	case routeWild:
		return strings.HasSuffix(p, routeSuffix)
	default:
		return p == r
	}
}

// stripPort drops a ":port" from a host.
func stripPort(h string) string {
	i := strings.LastIndexByte(h, ':')
	if i < 0 || strings.Contains(h[i:], "]") {
		return h
	}
	for _, c := range h[i+1:] {
		if c < '0' || c > '9' {
			return h
		}
	}
	return h[:i]
}
