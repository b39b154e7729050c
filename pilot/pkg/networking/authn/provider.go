package authn

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"

	"github.com/wayfinder-dev/wayfinder/pkg/jwks"
)

// strictHeaderName is istiod's validStrictHeaderNameRegex, which
// outputClaimToHeaders header names must match.
var strictHeaderName = regexp.MustCompile("^[-_A-Za-z0-9]+$")

// provider is istiod's JwtProvider for one rule (convertToEnvoyJwtConfig,
// JwksFetchMode istiod, clearRouteCache true as for every gateway). A rule
// that istiod's validation would reject, or whose key set is unknown, is
// served fail-closed: its issuer with PublicOnlyJWKS, so every token of
// that issuer is rejected and requests without one still pass, exactly as
// istiod serves a rule whose jwksUri cannot be fetched.
func (b *builder) provider(r *rule) *jwtv3.JwtProvider {
	s := r.spec
	bad := false
	fail := func(sub, format string, args ...any) {
		bad = true
		b.problem(r, sub, format+"; the rule is served fail-closed (every token of its issuer is rejected)", args...)
	}

	if s.GetIssuer() == "" && s.GetJwksUri() == "" {
		fail("", "issuer or jwksUri must be non-empty string")
	}
	for i, aud := range s.GetAudiences() {
		if aud == "" {
			fail(fmt.Sprintf("audiences[%d]", i), "audience must be non-empty string")
		}
	}
	if u := s.GetJwksUri(); u != "" {
		if err := checkJwksURI(u); err != nil {
			fail("jwksUri", "%v", err)
		}
	}
	if j := s.GetJwks(); j != "" {
		if err := checkInlineJWKS(j); err != nil {
			fail("jwks", "jwks parse error: %v", err)
		}
	}
	timeout := DefaultTimeout
	if d := s.GetTimeout(); d != nil {
		timeout = d.AsDuration()
		switch {
		case timeout < time.Millisecond:
			fail("timeout", "duration must be greater than 1ms")
		case timeout%time.Millisecond != 0:
			fail("timeout", "only durations to ms precision are supported")
		}
	}

	// Token locations are kept even when the rule fails closed: tokens in
	// them must still be rejected.
	var headers []*jwtv3.JwtHeader
	for i, h := range s.GetFromHeaders() {
		if h.GetName() == "" {
			fail(fmt.Sprintf("fromHeaders[%d].name", i), "location header name must be non-empty string")
			continue
		}
		headers = append(headers, &jwtv3.JwtHeader{Name: h.GetName(), ValuePrefix: h.GetPrefix()})
	}
	var params, cookies []string
	for i, q := range s.GetFromParams() {
		if q == "" {
			fail(fmt.Sprintf("fromParams[%d]", i), "location query must be non-empty string")
			continue
		}
		params = append(params, q)
	}
	for i, c := range s.GetFromCookies() {
		if c == "" {
			fail(fmt.Sprintf("fromCookies[%d]", i), "cookie name must be non-empty string")
			continue
		}
		cookies = append(cookies, c)
	}
	var claimHeaders []*jwtv3.JwtClaimToHeader
	for i, ch := range s.GetOutputClaimToHeaders() {
		field := fmt.Sprintf("outputClaimToHeaders[%d]", i)
		switch {
		case ch.GetClaim() == "" || ch.GetHeader() == "":
			fail(field, "outputClaimToHeaders header and claim value must be non-empty string")
		case !strictHeaderName.MatchString(ch.GetHeader()):
			fail(field+".header", "header name %s is not a valid header name", ch.GetHeader())
		default:
			claimHeaders = append(claimHeaders, &jwtv3.JwtClaimToHeader{HeaderName: ch.GetHeader(), ClaimName: ch.GetClaim()})
		}
	}

	p := &jwtv3.JwtProvider{
		Issuer:               s.GetIssuer(),
		Audiences:            s.GetAudiences(),
		Forward:              s.GetForwardOriginalToken(),
		ForwardPayloadHeader: s.GetOutputPayloadToHeader(),
		FromHeaders:          headers,
		FromParams:           params,
		FromCookies:          cookies,
		ClaimToHeaders:       claimHeaders,
		PayloadInMetadata:    PayloadMetadataKey,
		NormalizePayloadInMetadata: &jwtv3.JwtProvider_NormalizePayload{
			SpaceDelimitedClaims: spaceDelimitedClaims(s.GetSpaceDelimitedClaims()),
		},
		// istiod passes clearRouteCache = proxy is not a sidecar: routes
		// may match on the claims jwt_authn writes.
		ClearRouteCache: true,
	}
	if !bad {
		p.JwksSourceSpecifier = inline(b.keySet(r, timeout))
		if err := p.ValidateAll(); err == nil {
			return p
		} else {
			b.problem(r, "", "%v; the rule is served fail-closed (every token of its issuer is rejected)", err)
		}
	}
	return failClosed(p)
}

// failClosed keeps of p only what decides which tokens it looks at and
// rejects them all.
func failClosed(p *jwtv3.JwtProvider) *jwtv3.JwtProvider {
	out := &jwtv3.JwtProvider{
		Issuer:                     p.Issuer,
		FromHeaders:                p.FromHeaders,
		FromParams:                 p.FromParams,
		FromCookies:                p.FromCookies,
		PayloadInMetadata:          p.PayloadInMetadata,
		NormalizePayloadInMetadata: p.NormalizePayloadInMetadata,
		ClearRouteCache:            p.ClearRouteCache,
		JwksSourceSpecifier:        inline(jwks.PublicOnlyJWKS),
	}
	if out.ValidateAll() != nil {
		// A location Envoy refuses: fall back to the default locations.
		out.FromHeaders, out.FromParams, out.FromCookies = nil, nil, nil
	}
	return out
}

// keySet is the rule's key set: inline jwks as written, else the
// resolver's (istiod's BuildLocalJwks), else PublicOnlyJWKS with a
// warning (the object is valid; the fetch failed).
func (b *builder) keySet(r *rule, timeout time.Duration) string {
	if j := r.spec.GetJwks(); j != "" {
		return j
	}
	field := "jwksUri"
	if r.spec.GetJwksUri() == "" {
		field = "issuer" // found through OpenID discovery
	}
	if b.in.JWKS == nil {
		b.warning(r, field, "no JWKS resolver; tokens of issuer %q are rejected", r.spec.GetIssuer())
		return jwks.PublicOnlyJWKS
	}
	set, err := b.in.JWKS.JWKS(r.spec.GetIssuer(), r.spec.GetJwksUri(), timeout)
	if err != nil {
		b.warning(r, field, "fetching the JWKS failed, tokens of issuer %q are rejected until a fetch succeeds: %v",
			r.spec.GetIssuer(), err)
		return jwks.PublicOnlyJWKS
	}
	return set
}

func inline(s string) *jwtv3.JwtProvider_LocalJwks {
	return &jwtv3.JwtProvider_LocalJwks{LocalJwks: &corev3.DataSource{
		Specifier: &corev3.DataSource_InlineString{InlineString: s},
	}}
}

// spaceDelimitedClaims is istiod's buildSpaceDelimitedClaims: "permission"
// and "scope" always, plus the rule's, sorted and deduplicated.
func spaceDelimitedClaims(extra []string) []string {
	out := append([]string{"permission", "scope"}, extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkJwksURI is istiod's ParseJwksURI check: http or https, numeric port.
func checkJwksURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URI scheme %q is not supported", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.Atoi(p); err != nil {
			return err
		}
	}
	return nil
}

// checkInlineJWKS approximates istiod's jwk.Parse: a JWKS object whose
// keys are objects with a "kty".
func checkInlineJWKS(s string) error {
	if err := jwks.ValidateFormat([]byte(s)); err != nil {
		return err
	}
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		return fmt.Errorf("keys must be objects: %w", err)
	}
	for i, k := range doc.Keys {
		if kty, _ := k["kty"].(string); kty == "" {
			return fmt.Errorf("key %d has no \"kty\"", i)
		}
	}
	return nil
}
