package authz

import (
	"regexp"
	"strings"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// The string, header and metadata matchers of istiod's
// pilot/pkg/security/authz/matcher, with its wildcard rules: "*" alone is
// presence (or the regex ".+"), a leading "*" a suffix, a trailing "*" a
// prefix.

func exactMatcher(v string, ignoreCase bool) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}
}

func prefixMatcher(v string, ignoreCase bool) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: v}}
}

func suffixMatcher(v string, ignoreCase bool) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: v}}
}

func regexMatcher(re string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}

// stringMatcher is istiod's matcher.StringMatcher.
func stringMatcher(v string) *matcherv3.StringMatcher { return stringMatcherWithPrefix(v, "") }

// stringMatcherWithPrefix is istiod's matcher.StringMatcherWithPrefix:
// prefix is put before v, except for "*", which matches any non-empty
// value.
func stringMatcherWithPrefix(v, prefix string) *matcherv3.StringMatcher {
	switch {
	case v == "*":
		return regexMatcher(".+")
	case strings.HasPrefix(v, "*"):
		if prefix == "" {
			return suffixMatcher(strings.TrimPrefix(v, "*"), false)
		}
		return regexMatcher(prefix + ".*" + regexp.QuoteMeta(strings.TrimPrefix(v, "*")))
	case strings.HasSuffix(v, "*"):
		return prefixMatcher(prefix+strings.TrimSuffix(v, "*"), false)
	default:
		return exactMatcher(prefix+v, false)
	}
}

// stringOrMatcher is istiod's matcher.StringOrMatcher.
func stringOrMatcher(vs []string) *matcherv3.ValueMatcher {
	var ms []*matcherv3.ValueMatcher
	for _, v := range vs {
		ms = append(ms, &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: stringMatcher(v)}})
	}
	return orMatcher(ms)
}

func orMatcher(ms []*matcherv3.ValueMatcher) *matcherv3.ValueMatcher {
	if len(ms) == 1 {
		return ms[0]
	}
	return &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_OrMatch{OrMatch: &matcherv3.OrMatcher{ValueMatchers: ms}}}
}

// headerMatcher is istiod's matcher.HeaderMatcher (ignoreCase false) and
// HostMatcher (ignoreCase true).
func headerMatcher(name, v string, ignoreCase bool) *routev3.HeaderMatcher {
	var sm *matcherv3.StringMatcher
	switch {
	case v == "*":
		return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}}
	case strings.HasPrefix(v, "*"):
		sm = suffixMatcher(v[1:], ignoreCase)
	case strings.HasSuffix(v, "*"):
		sm = prefixMatcher(v[:len(v)-1], ignoreCase)
	default:
		sm = exactMatcher(v, ignoreCase)
	}
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: sm}}
}

// metadataValueMatcher is istiod's matcher.MetadataValueMatcher: one key.
func metadataValueMatcher(filter, key string, v *matcherv3.ValueMatcher) *matcherv3.MetadataMatcher {
	return &matcherv3.MetadataMatcher{Filter: filter, Path: metadataPath([]string{key}), Value: v}
}

func metadataPath(keys []string) []*matcherv3.MetadataMatcher_PathSegment {
	out := make([]*matcherv3.MetadataMatcher_PathSegment, 0, len(keys))
	for _, k := range keys {
		out = append(out, &matcherv3.MetadataMatcher_PathSegment{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: k}})
	}
	return out
}

// metadataListValueMatcher is istiod's matcher.MetadataListValueMatcher.
// With orScalar (istiod's useExtendedJwt, always on for JWT claims), the
// value matches a list containing it or the scalar itself, so a claim
// that is a string and one that is a list of strings both match.
func metadataListValueMatcher(filter string, keys []string, v *matcherv3.ValueMatcher, orScalar bool) *matcherv3.MetadataMatcher {
	list := &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_ListMatch{ListMatch: &matcherv3.ListMatcher{
		MatchPattern: &matcherv3.ListMatcher_OneOf{OneOf: v},
	}}}
	out := &matcherv3.MetadataMatcher{Filter: filter, Path: metadataPath(keys), Value: list}
	if orScalar {
		out.Value = &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_OrMatch{OrMatch: &matcherv3.OrMatcher{
			ValueMatchers: []*matcherv3.ValueMatcher{list, v},
		}}}
	}
	return out
}

// jwtFilterName and jwtPayloadKey locate the verified token's claims in
// dynamic metadata: jwt_authn's payload_in_metadata, as the authn
// translator (and istiod) configure it.
const (
	jwtFilterName = "envoy.filters.http.jwt_authn"
	jwtPayloadKey = "payload"
)

// jwtClaimMatcher is istiod's MetadataStringMatcherForJWTClaim: a scalar
// claim.
func jwtClaimMatcher(claim string, m *matcherv3.StringMatcher) *matcherv3.MetadataMatcher {
	return &matcherv3.MetadataMatcher{
		Filter: jwtFilterName,
		Path:   metadataPath([]string{jwtPayloadKey, claim}),
		Value:  &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: m}},
	}
}

// jwtClaimsListMatcher is istiod's MetadataListValueMatcherForJWTClaims.
func jwtClaimsListMatcher(claims []string, v *matcherv3.ValueMatcher) *matcherv3.MetadataMatcher {
	return metadataListValueMatcher(jwtFilterName, append([]string{jwtPayloadKey}, claims...), v, true)
}

// Permission and principal constructors (istiod's permission.go,
// principal.go).

func permAny() *rbacv3.Permission { return &rbacv3.Permission{Rule: &rbacv3.Permission_Any{Any: true}} }

func permAnd(ps []*rbacv3.Permission) *rbacv3.Permission {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_AndRules{AndRules: &rbacv3.Permission_Set{Rules: ps}}}
}

func permOr(ps []*rbacv3.Permission) *rbacv3.Permission {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_OrRules{OrRules: &rbacv3.Permission_Set{Rules: ps}}}
}

func permNot(p *rbacv3.Permission) *rbacv3.Permission {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_NotRule{NotRule: p}}
}

func permHeader(h *routev3.HeaderMatcher) *rbacv3.Permission {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_Header{Header: h}}
}

func permMetadata(m *matcherv3.MetadataMatcher) *rbacv3.Permission {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_Metadata{Metadata: m}}
}

func principalAny() *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Any{Any: true}}
}

func principalAnd(ps []*rbacv3.Principal) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_AndIds{AndIds: &rbacv3.Principal_Set{Ids: ps}}}
}

func principalOr(ps []*rbacv3.Principal) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_OrIds{OrIds: &rbacv3.Principal_Set{Ids: ps}}}
}

func principalNot(p *rbacv3.Principal) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_NotId{NotId: p}}
}

func principalMetadata(m *matcherv3.MetadataMatcher) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Metadata{Metadata: m}}
}

// principalAuthenticated matches the peer certificate's identity. A
// gateway always reads it from the TLS connection (istiod's
// useAuthenticated, true for everything but waypoints).
func principalAuthenticated(m *matcherv3.StringMatcher) *rbacv3.Principal {
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Authenticated_{
		Authenticated: &rbacv3.Principal_Authenticated{PrincipalName: m},
	}}
}
