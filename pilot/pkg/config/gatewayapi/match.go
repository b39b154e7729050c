package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// pathKind ranks path match types by the Gateway API's precedence; lower
// comes first.
type pathKind int

const (
	pathExact pathKind = iota
	pathRegex
	pathPrefix
)

// precedence is what the Gateway API orders matches by, across every route
// attached to one hostname (see the package doc).
type precedence struct {
	kind    pathKind
	length  int // characters of the path value
	method  bool
	headers int
	queries int
	// tie-breaks: the route's position (oldest first, then
	// namespace/name), the rule and the match within it.
	order, rule, match int
}

// compare orders a before b when it takes precedence.
func (a precedence) compare(b precedence) int {
	switch {
	case a.kind != b.kind:
		return int(a.kind) - int(b.kind)
	case a.length != b.length:
		return b.length - a.length
	case a.method != b.method:
		if a.method {
			return -1
		}
		return 1
	case a.headers != b.headers:
		return b.headers - a.headers
	case a.queries != b.queries:
		return b.queries - a.queries
	case a.order != b.order:
		return a.order - b.order
	case a.rule != b.rule:
		return a.rule - b.rule
	}
	return a.match - b.match
}

// pathPiece is one Istio match standing for (part of) a Gateway API path
// match. A PathPrefix "/foo" is element-wise ("/foo" and "/foo/bar", never
// "/foobar") while Envoy's prefix is character-wise, so it becomes two
// pieces: exactly "/foo" and prefix "/foo/" (below, true). A prefix
// replacement then rewrites each piece on its own.
type pathPiece struct {
	uri   *networking.StringMatch // nil: every path
	below bool                    // the piece matches below the prefix ("/foo/", or "/")
}

// matchInfo is a converted HTTPRouteMatch.
type matchInfo struct {
	pieces []pathPiece
	// rest is the match without uri: headers, query params, method.
	rest *networking.HTTPMatchRequest
	key  precedence
}

// convertMatch converts one HTTPRouteMatch; a match without conditions
// stands for PathPrefix "/".
func convertMatch(m gw.HTTPRouteMatch) (matchInfo, error) {
	out := matchInfo{rest: &networking.HTTPMatchRequest{}}
	typ, value := gw.PathMatchPathPrefix, "/"
	if m.Path != nil {
		typ, value = deref(m.Path.Type, gw.PathMatchPathPrefix), deref(m.Path.Value, "/")
	}
	switch typ {
	case gw.PathMatchExact:
		if !strings.HasPrefix(value, "/") {
			return out, fmt.Errorf("path %q must start with /", value)
		}
		out.key.kind = pathExact
		out.pieces = []pathPiece{{uri: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: value}}}}
	case gw.PathMatchRegularExpression:
		out.key.kind = pathRegex
		out.pieces = []pathPiece{{uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: value}}}}
	case gw.PathMatchPathPrefix:
		if !strings.HasPrefix(value, "/") {
			return out, fmt.Errorf("path %q must start with /", value)
		}
		out.key.kind = pathPrefix
		p := strings.TrimRight(value, "/")
		if p == "" {
			out.pieces = []pathPiece{{below: true}}
		} else {
			out.pieces = []pathPiece{
				{uri: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: p}}},
				{uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: p + "/"}}, below: true},
			}
		}
	default:
		return out, fmt.Errorf("path type %q is not one of Exact, PathPrefix, RegularExpression", typ)
	}
	out.key.length = len(value)
	for _, h := range m.Headers {
		sm, err := stringMatch(string(deref(h.Type, gw.HeaderMatchExact)), h.Value)
		if err != nil {
			return out, fmt.Errorf("header %s: %v", h.Name, err)
		}
		if out.rest.Headers == nil {
			out.rest.Headers = map[string]*networking.StringMatch{}
		}
		name := strings.ToLower(string(h.Name))
		if _, dup := out.rest.Headers[name]; dup {
			// The specification: only the first entry of a name counts.
			continue
		}
		out.rest.Headers[name] = sm
	}
	for _, q := range m.QueryParams {
		sm, err := stringMatch(string(deref(q.Type, gw.QueryParamMatchExact)), q.Value)
		if err != nil {
			return out, fmt.Errorf("query param %s: %v", q.Name, err)
		}
		if out.rest.QueryParams == nil {
			out.rest.QueryParams = map[string]*networking.StringMatch{}
		}
		if _, dup := out.rest.QueryParams[string(q.Name)]; dup {
			continue
		}
		out.rest.QueryParams[string(q.Name)] = sm
	}
	if m.Method != nil {
		out.rest.Method = &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: string(*m.Method)}}
		out.key.method = true
	}
	out.key.headers, out.key.queries = len(out.rest.Headers), len(out.rest.QueryParams)
	return out, nil
}

func stringMatch(typ, value string) (*networking.StringMatch, error) {
	switch typ {
	case "Exact":
		return &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: value}}, nil
	case "RegularExpression":
		return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: value}}, nil
	}
	return nil, fmt.Errorf("match type %q is not one of Exact, RegularExpression", typ)
}

// istioMatches returns the Istio matches of the given pieces, each the
// piece's uri with the rest of the match; nil when the match is everything.
func (m matchInfo) istioMatches(pieces []pathPiece) []*networking.HTTPMatchRequest {
	var out []*networking.HTTPMatchRequest
	for _, p := range pieces {
		im := cloneMatch(m.rest)
		im.Uri = p.uri
		out = append(out, im)
	}
	if len(out) == 1 && isEmptyMatch(out[0]) {
		return nil
	}
	return slices.Clip(out)
}

func isEmptyMatch(m *networking.HTTPMatchRequest) bool {
	return m.Uri == nil && len(m.Headers) == 0 && len(m.QueryParams) == 0 && m.Method == nil
}
