package route

import (
	"fmt"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// Pseudo-headers Envoy exposes for the request line.
const (
	headerMethod    = ":method"
	headerAuthority = ":authority"
	headerScheme    = ":scheme"
)

// catchAllMatch is the match of an HTTP route without match conditions.
func catchAllMatch() *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
}

// isCatchAll reports whether m matches every request, so nothing after it
// in the same virtual host can match.
func isCatchAll(m *routev3.RouteMatch) bool {
	return (m.GetPrefix() == "/" || m.GetSafeRegex().GetRegex() == ".*") && len(m.GetHeaders()) == 0 && len(m.GetQueryParameters()) == 0 &&
		len(m.GetDynamicMetadata()) == 0 && m.GetRuntimeFraction() == nil && m.GetGrpc() == nil && m.GetTlsContext() == nil
}

// translateMatch builds the Envoy match for one HTTPMatchRequest (nil: match
// everything). field is the path of the match, for errors.
func translateMatch(in *networking.HTTPMatchRequest, field string, p *problems) *routev3.RouteMatch {
	out := catchAllMatch()
	if in == nil {
		return out
	}
	if uri := in.GetUri(); uri != nil {
		f := field + ".uri"
		switch m := uri.GetMatchType().(type) {
		case *networking.StringMatch_Exact:
			if m.Exact == "" {
				p.errorf(f+".exact", "must not be empty")
			}
			out.PathSpecifier = &routev3.RouteMatch_Path{Path: m.Exact}
		case *networking.StringMatch_Prefix:
			if m.Prefix == "" {
				p.errorf(f+".prefix", "must not be empty")
			}
			out.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: m.Prefix}
		case *networking.StringMatch_Regex:
			out.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: regexMatcher(m.Regex, f+".regex", p)}
		}
	}
	if in.GetIgnoreUriCase() {
		out.CaseSensitive = wrapperspb.Bool(false)
	}

	for _, name := range sortedKeys(in.GetHeaders()) {
		out.Headers = append(out.Headers, headerMatcher(name, in.GetHeaders()[name], fmt.Sprintf("%s.headers[%s]", field, name), p))
	}
	for _, name := range sortedKeys(in.GetWithoutHeaders()) {
		sm := in.GetWithoutHeaders()[name]
		h := headerMatcher(name, sm, fmt.Sprintf("%s.withoutHeaders[%s]", field, name), p)
		h.InvertMatch = true
		// Without this, a request lacking the header would not match an
		// inverted value match, yet it plainly does not carry that value.
		if !h.GetPresentMatch() {
			h.TreatMissingHeaderAsEmpty = true
		}
		out.Headers = append(out.Headers, h)
	}
	// Stable: a name in both headers and withoutHeaders keeps that order.
	slices.SortStableFunc(out.Headers, func(a, b *routev3.HeaderMatcher) int { return strings.Compare(a.Name, b.Name) })
	if in.GetMethod() != nil {
		out.Headers = append(out.Headers, headerMatcher(headerMethod, in.GetMethod(), field+".method", p))
	}
	if in.GetAuthority() != nil {
		out.Headers = append(out.Headers, headerMatcher(headerAuthority, in.GetAuthority(), field+".authority", p))
	}
	if in.GetScheme() != nil {
		out.Headers = append(out.Headers, headerMatcher(headerScheme, in.GetScheme(), field+".scheme", p))
	}

	for _, name := range sortedKeys(in.GetQueryParams()) {
		f := fmt.Sprintf("%s.queryParams[%s]", field, name)
		q := &routev3.QueryParameterMatcher{Name: name}
		if name == "" {
			p.errorf(f, "query parameter name must not be empty")
		}
		if sm := stringMatcher(in.GetQueryParams()[name], f, p); sm == nil {
			q.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}
		} else {
			q.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_StringMatch{StringMatch: sm}
		}
		out.QueryParameters = append(out.QueryParameters, q)
	}

	if len(in.GetSourceLabels()) > 0 || in.GetSourceNamespace() != "" {
		p.warnf(field, "sourceLabels and sourceNamespace are not applied at gateways yet; the match ignores them")
	}
	return out
}

// headerMatcher matches header name against in; an empty StringMatch (and
// Istio's regex "*") means the header only has to be present.
//
// HTTP header names have no case, and Envoy compares them in lower case, so
// a name written with upper-case letters (as istiod accepts it) is matched
// lower-cased, with a warning saying so rather than an error.
func headerMatcher(name string, in *networking.StringMatch, field string, p *problems) *routev3.HeaderMatcher {
	checkHeaderName(name, field, p)
	lower := strings.ToLower(name)
	if lower != name && !strings.HasPrefix(name, "@") {
		p.warnf(field, "header name %q has upper-case letters; header names are matched without case, as %q", name, lower)
	}
	out := &routev3.HeaderMatcher{Name: lower}
	if sm := stringMatcher(in, field, p); sm == nil {
		out.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
	} else {
		out.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{StringMatch: sm}
	}
	return out
}

// stringMatcher converts an Istio StringMatch; nil means "present", which
// is what an empty match, an empty prefix and the regex "*" ask for.
func stringMatcher(in *networking.StringMatch, field string, p *problems) *matcherv3.StringMatcher {
	switch m := in.GetMatchType().(type) {
	case *networking.StringMatch_Exact:
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: m.Exact}}
	case *networking.StringMatch_Prefix:
		if m.Prefix == "" {
			return nil
		}
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: m.Prefix}}
	case *networking.StringMatch_Regex:
		if m.Regex == "*" {
			return nil
		}
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: regexMatcher(m.Regex, field+".regex", p)}}
	}
	return nil
}

// regexMatcher builds an RE2 matcher (Envoy's default engine). Go's regexp
// speaks RE2 syntax, so a pattern it rejects would make Envoy reject the
// whole route configuration; it is reported here instead. So is a pattern
// whose RE2 program is over Envoy's default size limit (an estimate, see
// re2ProgramSize): one within the estimate's margin of the limit is sent
// with a warning.
func regexMatcher(re, field string, p *problems) *matcherv3.RegexMatcher {
	if re == "" {
		p.errorf(field, "regex must not be empty")
	} else if size, err := re2ProgramSize(re); err != nil {
		// The same parse regexp.Compile does, and the same error.
		p.errorf(field, "invalid RE2 regex %q: %v", re, err)
	} else if !p.proxyless {
		switch {
		case size > EnvoyMaxRegexProgramSize:
			p.errorf(field, "regex %q compiles to an RE2 program of about %d instructions, over Envoy's limit of %d "+
				"(re2.max_program_size.error_level), so Envoy would reject the route table; simplify it (fewer repeats {n,m}, "+
				"alternatives or Unicode classes)", re, size, EnvoyMaxRegexProgramSize)
		case size > EnvoyMaxRegexProgramSize-estimateMargin:
			p.warnf(field, "regex %q compiles to an RE2 program of about %d instructions, close to Envoy's limit of %d; "+
				"if Envoy rejects the route table, simplify it", re, size, EnvoyMaxRegexProgramSize)
		}
	}
	return &matcherv3.RegexMatcher{Regex: re}
}

// checkHeaderName reports names Envoy cannot match on: HTTP header names
// are tokens (RFC 9110), optionally a pseudo-header with a leading ':'.
func checkHeaderName(name, field string, p *problems) {
	if strings.HasPrefix(name, "@request.auth.claims") {
		p.errorf(field, "matching on JWT claims (%s) is not supported", name)
		return
	}
	if !isToken(strings.TrimPrefix(name, ":")) {
		p.errorf(field, "%q is not a valid HTTP header name", name)
	}
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
