package authz

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	uritemplatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// The generators of istiod's pilot/pkg/security/authz/model/generator.go,
// one per attribute. A value generator turns one value into a permission
// or principal (several values are OR-ed by the caller); a list generator
// turns all the values at once (the JWT attributes, whose values become
// one metadata matcher).

// errHTTPOnly marks an attribute that a TCP filter chain cannot match.
var errHTTPOnly = errors.New("is HTTP only")

func httpOnly(key string) error { return fmt.Errorf("%q %w", key, errHTTPOnly) }

type (
	permGen      func(key, value string, forTCP bool) (*rbacv3.Permission, error)
	permListGen  func(key string, values []string, forTCP bool) (*rbacv3.Permission, error)
	princGen     func(key, value string, forTCP bool) (*rbacv3.Principal, error)
	princListGen func(key string, values []string, forTCP bool) (*rbacv3.Principal, error)
)

// cidr is istiod's util.AddrStrToCidrRange: a CIDR, or an address taken
// as /32 or /128.
func cidr(v string) (*corev3.CidrRange, error) {
	if v == "" {
		return nil, errors.New("empty address")
	}
	var p netip.Prefix
	if strings.Contains(v, "/") {
		var err error
		if p, err = netip.ParsePrefix(v); err != nil {
			return nil, fmt.Errorf("bad CIDR range %q: %v", v, err)
		}
	} else {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("bad IP address %q", v)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))}, nil
}

// port is istiod's convertToPort.
func port(v string) (uint32, error) {
	p, err := strconv.ParseUint(v, 10, 32)
	if err != nil || p > 65535 {
		return 0, fmt.Errorf("bad port %q", v)
	}
	return uint32(p), nil
}

func genDestIP(_, v string, _ bool) (*rbacv3.Permission, error) {
	c, err := cidr(v)
	if err != nil {
		return nil, err
	}
	return &rbacv3.Permission{Rule: &rbacv3.Permission_DestinationIp{DestinationIp: c}}, nil
}

func genDestPort(_, v string, _ bool) (*rbacv3.Permission, error) {
	p, err := port(v)
	if err != nil {
		return nil, err
	}
	return &rbacv3.Permission{Rule: &rbacv3.Permission_DestinationPort{DestinationPort: p}}, nil
}

func genSNI(_, v string, _ bool) (*rbacv3.Permission, error) {
	return &rbacv3.Permission{Rule: &rbacv3.Permission_RequestedServerName{RequestedServerName: stringMatcher(v)}}, nil
}

// envoyFilterParts splits "experimental.envoy.filters.a.b[c]" into
// "envoy.filters.a.b" and "c".
func envoyFilterParts(key string) (string, string, error) {
	parts := strings.SplitN(strings.TrimSuffix(strings.TrimPrefix(key, "experimental."), "]"), "[", 2)
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("bad key %q: want experimental.envoy.filters.NAME[KEY]", key)
	}
	return parts[0], parts[1], nil
}

// genEnvoyFilter is istiod's envoyFilterGenerator.extendedPermission: a
// value "[v]" matches a list holding v, others the string itself.
func genEnvoyFilter(key string, values []string, _ bool) (*rbacv3.Permission, error) {
	filter, k, err := envoyFilterParts(key)
	if err != nil {
		return nil, err
	}
	var ms []*matcherv3.ValueMatcher
	for _, v := range values {
		if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			ms = append(ms, &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_ListMatch{ListMatch: &matcherv3.ListMatcher{
				MatchPattern: &matcherv3.ListMatcher_OneOf{OneOf: &matcherv3.ValueMatcher{
					MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: stringMatcher(strings.Trim(v, "[]"))},
				}},
			}}})
			continue
		}
		ms = append(ms, &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: stringMatcher(v)}})
	}
	return permMetadata(metadataValueMatcher(filter, k, orMatcher(ms))), nil
}

func genSrcIP(_, v string, _ bool) (*rbacv3.Principal, error) {
	c, err := cidr(v)
	if err != nil {
		return nil, err
	}
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_DirectRemoteIp{DirectRemoteIp: c}}, nil
}

func genRemoteIP(_, v string, _ bool) (*rbacv3.Principal, error) {
	c, err := cidr(v)
	if err != nil {
		return nil, err
	}
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_RemoteIp{RemoteIp: c}}, nil
}

func genSrcNamespace(_, v string, _ bool) (*rbacv3.Principal, error) {
	parts := strings.Split(v, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return principalAuthenticated(regexMatcher(fmt.Sprintf(".*/ns/%s/.*", strings.Join(parts, ".*")))), nil
}

// genSrcServiceAccount is istiod's srcServiceAccountGenerator: "SA" (of
// the policy's namespace) or "NS/SA".
func genSrcServiceAccount(policyNS string) princGen {
	return func(_, v string, _ bool) (*rbacv3.Principal, error) {
		ns, sa, ok := strings.Cut(v, "/")
		if !ok {
			ns, sa = policyNS, v
		}
		re := fmt.Sprintf("spiffe://.+/ns/%s/(.+/|)sa/%s(/.+)?", regexp.QuoteMeta(ns), regexp.QuoteMeta(sa))
		return principalAuthenticated(regexMatcher(re)), nil
	}
}

func genSrcTrustDomain(_, v string, _ bool) (*rbacv3.Principal, error) {
	var m *matcherv3.StringMatcher
	switch {
	case v == "*":
		m = prefixMatcher("spiffe://", false)
	case !strings.Contains(v, "*"):
		m = prefixMatcher("spiffe://"+v+"/", false)
	default:
		parts := strings.SplitN(v, "*", 2)
		m = regexMatcher(fmt.Sprintf("spiffe://%s/.*", regexp.QuoteMeta(parts[0])+"[^/]*"+regexp.QuoteMeta(parts[1])))
	}
	return principalAuthenticated(m), nil
}

func genSrcPrincipal(_, v string, _ bool) (*rbacv3.Principal, error) {
	return principalAuthenticated(stringMatcherWithPrefix(v, "spiffe://")), nil
}

var matchAny = regexMatcher(".+")

// genRequestPrincipal is istiod's requestPrincipalGenerator: "ISS/SUB",
// split at the last "/" (issuers are URLs), each side matched against
// the verified token's iss and sub claims.
func genRequestPrincipal(key string, values []string, forTCP bool) (*rbacv3.Principal, error) {
	if forTCP {
		return nil, httpOnly(key)
	}
	var or []*rbacv3.Principal
	for _, v := range values {
		idx := strings.LastIndex(v, "/")
		found := idx >= 0
		iss, sub := v, ""
		if found {
			iss, sub = v[:idx], v[idx+1:]
		}
		var mIss, mSub *matcherv3.StringMatcher
		switch {
		case v == "*":
			mIss, mSub = matchAny, matchAny
		case strings.HasPrefix(v, "*"):
			if found {
				if iss == "*" {
					mIss = matchAny
				} else {
					mIss = suffixMatcher(strings.TrimPrefix(iss, "*"), false)
				}
				mSub = exactMatcher(sub, false)
			} else {
				mIss = matchAny
				mSub = suffixMatcher(strings.TrimPrefix(v, "*"), false)
			}
		case strings.HasSuffix(v, "*"):
			if found {
				mIss = exactMatcher(iss, false)
				if sub == "*" {
					mSub = matchAny
				} else {
					mSub = prefixMatcher(strings.TrimSuffix(sub, "*"), false)
				}
			} else {
				mIss = prefixMatcher(strings.TrimSuffix(v, "*"), false)
				mSub = matchAny
			}
		default:
			mIss, mSub = exactMatcher(iss, false), exactMatcher(sub, false)
		}
		or = append(or, principalAnd([]*rbacv3.Principal{
			principalMetadata(jwtClaimMatcher("iss", mIss)),
			principalMetadata(jwtClaimMatcher("sub", mSub)),
		}))
	}
	switch len(or) {
	case 0:
		return nil, nil
	case 1:
		return or[0], nil
	}
	return principalOr(or), nil
}

func genClaimList(claim ...string) princListGen {
	return func(key string, values []string, forTCP bool) (*rbacv3.Principal, error) {
		if forTCP {
			return nil, httpOnly(key)
		}
		return principalMetadata(jwtClaimsListMatcher(claim, stringOrMatcher(values))), nil
	}
}

// genRequestClaim is istiod's requestClaimGenerator:
// request.auth.claims[a][b] matches the nested claim a.b.
func genRequestClaim(key string, values []string, forTCP bool) (*rbacv3.Principal, error) {
	if forTCP {
		return nil, httpOnly(key)
	}
	claims, err := nestedBrackets(strings.TrimPrefix(key, attrRequestClaims))
	if err != nil {
		return nil, err
	}
	return principalMetadata(jwtClaimsListMatcher(claims, stringOrMatcher(values))), nil
}

func genRequestHeader(key, v string, forTCP bool) (*rbacv3.Principal, error) {
	if forTCP {
		return nil, httpOnly(key)
	}
	name, err := inBrackets(strings.TrimPrefix(key, attrRequestHeader))
	if err != nil {
		return nil, err
	}
	return &rbacv3.Principal{Identifier: &rbacv3.Principal_Header{Header: headerMatcher(name, v, false)}}, nil
}

func genHost(key, v string, forTCP bool) (*rbacv3.Permission, error) {
	if forTCP {
		return nil, httpOnly(key)
	}
	return permHeader(headerMatcher(":authority", v, true)), nil
}

func genMethod(key, v string, forTCP bool) (*rbacv3.Permission, error) {
	if forTCP {
		return nil, httpOnly(key)
	}
	return permHeader(headerMatcher(":method", v, false)), nil
}

// genPath is istiod's pathGenerator: a value holding {*} or {**} is an
// Envoy uri_template; others are path string matchers.
func genPath(key, v string, forTCP bool) (*rbacv3.Permission, error) {
	if forTCP {
		return nil, httpOnly(key)
	}
	if containsPathTemplate(v) {
		if err := checkPathTemplate(v); err != nil {
			return nil, err
		}
		tmpl, err := protoconv.ValidatedAny(&uritemplatev3.UriTemplateMatchConfig{PathTemplate: templateReplacer.Replace(v)})
		if err != nil {
			return nil, err
		}
		return &rbacv3.Permission{Rule: &rbacv3.Permission_UriTemplate{UriTemplate: &corev3.TypedExtensionConfig{
			Name: "uri-template", TypedConfig: tmpl,
		}}}, nil
	}
	return &rbacv3.Permission{Rule: &rbacv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{
		Rule: &matcherv3.PathMatcher_Path{Path: stringMatcher(v)},
	}}}, nil
}

const (
	matchOneTemplate = "{*}"
	matchAnyTemplate = "{**}"
)

var (
	templateReplacer = strings.NewReplacer(matchOneTemplate, "*", matchAnyTemplate, "**")
	validLiteral     = regexp.MustCompile("^[a-zA-Z0-9-._~%!$&'()+,;:@=]+$")
)

func containsPathTemplate(v string) bool {
	return strings.Contains(v, matchOneTemplate) || strings.Contains(v, matchAnyTemplate)
}

// checkPathTemplate is istiod's CheckValidPathTemplate (its admission
// check): {**} only last, no other braces, segments of valid characters.
// Envoy rejects the whole listener for a bad template, so a rule holding
// one is not sent.
func checkPathTemplate(path string) error {
	foundAny := false
	for _, glob := range strings.Split(strings.Trim(path, "/"), "/") {
		switch {
		case glob == matchOneTemplate && !foundAny:
			continue
		case glob == matchAnyTemplate && !foundAny:
			foundAny = true
			continue
		case (glob == matchAnyTemplate || glob == matchOneTemplate) && foundAny:
			return fmt.Errorf("invalid path template %q: {**} is not the last operator", path)
		}
		if strings.ContainsAny(glob, "{}") {
			return fmt.Errorf("invalid path template %q: '{' or '}' beyond a supported operator", path)
		}
		if !validLiteral.MatchString(glob) {
			return fmt.Errorf("invalid path template %q: segment %q has characters a template cannot hold", path, glob)
		}
	}
	return nil
}

// inBrackets is istiod's extractNameInBrackets.
func inBrackets(s string) (string, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return "", fmt.Errorf("expecting format [<NAME>], but found %s", s)
	}
	return strings.TrimPrefix(strings.TrimSuffix(s, "]"), "["), nil
}

// nestedBrackets is istiod's extractNameInNestedBrackets: "[a][b]" is
// [a b]; anything else must be one "[name]".
func nestedBrackets(s string) ([]string, error) {
	var claims []string
	end := func(begin int) int {
		if begin >= len(s) || s[begin] != '[' {
			return -1
		}
		for i := begin + 1; i < len(s); i++ {
			if s[i] == '[' {
				return -1
			}
			if s[i] == ']' {
				return i
			}
		}
		return -1
	}
	for begin := 0; begin < len(s); {
		e := end(begin)
		if e == -1 {
			name, err := inBrackets(s)
			if err != nil {
				return nil, err
			}
			return []string{name}, nil
		}
		claims = append(claims, s[begin+1:e])
		begin = e + 1
	}
	// istiod's admission check (validateMapKey) refuses these; its
	// builder would match the whole payload or an empty claim.
	if len(claims) == 0 || slices.Contains(claims, "") {
		return nil, fmt.Errorf("bad key %q: want [NAME] or [NAME][NESTED]...", s)
	}
	return claims, nil
}
