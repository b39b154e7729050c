package validation

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"time"

	securityv1beta1 "istio.io/api/security/v1beta1"
)

// allowedSecurityTargetRefs are the kinds a RequestAuthentication or
// AuthorizationPolicy may target: istiod's (validatePolicyTargetReference)
// and, beyond istiod, a Gateway API HTTPRoute or GRPCRoute and an Istio
// VirtualService, which scope the policy to that route on the gateways it
// is bound to.
var allowedSecurityTargetRefs = targetKinds{
	kinds: append(append([]groupKind{}, allowedTargetRefs.kinds...),
		groupKind{"gateway.networking.k8s.io", "HTTPRoute"},
		groupKind{"gateway.networking.k8s.io", "GRPCRoute"},
		groupKind{"networking.istio.io", "VirtualService"},
	),
	describe: "a gateway.networking.k8s.io Gateway, GatewayClass, HTTPRoute or GRPCRoute, a networking.istio.io " +
		"VirtualService or ServiceEntry, or a Service",
}

// strictHeaderName is istiod's validStrictHeaderNameRegex, which the
// header a claim is copied to must match.
var strictHeaderName = regexp.MustCompile("^[-_A-Za-z0-9]+$")

// requestAuthentication checks a security.istio.io RequestAuthentication
// by istiod 1.29's ValidateRequestAuthentication and validateJwtRule
// (pkg/config/validation/validation.go): one way of selecting workloads,
// and per JWT rule non-empty audiences, an issuer or a jwksUri, a jwksUri
// istiod can parse (http or https, numeric port), inline jwks that parse
// as a JSON Web Key or Key Set, non-empty token locations, claim-to-header
// pairs naming a plain header, and a timeout of whole milliseconds, at
// least 1ms.
//
// istiod's warning about private key material in jwks does not reject the
// object and is not reported. Stricter than istiod: a jwksUri without a
// host (Wayfinder fetches it, and there is nothing to fetch).
func (v *validator) requestAuthentication(ra *securityv1beta1.RequestAuthentication) {
	v.policySelection("spec", ra.GetSelector(), ra.GetTargetRef(), ra.GetTargetRefs(), allowedSecurityTargetRefs)
	for i, r := range ra.GetJwtRules() {
		v.jwtRule(at("spec.jwtRules", i), r)
	}
}

func (v *validator) jwtRule(f string, r *securityv1beta1.JWTRule) {
	if r == nil {
		return // istiod skips a null rule
	}
	for i, a := range r.GetAudiences() {
		if a == "" {
			v.add(at(f+".audiences", i), "audience must not be empty")
		}
	}
	if r.GetIssuer() == "" && r.GetJwksUri() == "" {
		v.add(f+".issuer", "issuer or jwksUri must be set")
	}
	if u := r.GetJwksUri(); u != "" {
		v.addErr(f+".jwksUri", parseJwksURI(u))
	}
	if j := r.GetJwks(); j != "" {
		if err := parseJWKS([]byte(j)); err != nil {
			v.add(f+".jwks", "jwks parse error: %v", err)
		}
	}
	for i, h := range r.GetFromHeaders() {
		hf := at(f+".fromHeaders", i)
		switch {
		case h == nil:
			v.add(hf, "location header must not be null")
		case h.GetName() == "":
			v.add(hf+".name", "location header name must not be empty")
		}
	}
	for i, p := range r.GetFromParams() {
		if p == "" {
			v.add(at(f+".fromParams", i), "location query parameter must not be empty")
		}
	}
	for i, c := range r.GetFromCookies() {
		if c == "" {
			v.add(at(f+".fromCookies", i), "cookie name must not be empty")
		}
	}
	for i, ch := range r.GetOutputClaimToHeaders() {
		cf := at(f+".outputClaimToHeaders", i)
		if ch == nil {
			v.add(cf, "outputClaimToHeaders entry must not be null")
			continue
		}
		if ch.GetClaim() == "" {
			v.add(cf+".claim", "claim must not be empty")
		}
		switch {
		case ch.GetHeader() == "":
			v.add(cf+".header", "header must not be empty")
		case ch.GetClaim() != "" && !strictHeaderName.MatchString(ch.GetHeader()):
			// istiod checks the header only when both are set.
			v.add(cf+".header", "header name %s is not a valid header name: want letters, digits, '-' and '_'", ch.GetHeader())
		}
	}
	if t := r.GetTimeout(); t != nil {
		// istiod's agent.ValidateDuration: at least 1ms, ms precision.
		v.checkDuration(f+".timeout", t, time.Millisecond)
	}
}

// parseJwksURI is istiod's security.ParseJwksURI as a check: an http or
// https URL whose port, if any, is a number. A URL without a host is
// refused too (stricter than istiod): there is nothing to fetch.
func parseJwksURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URI scheme %q is not supported: want http or https", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.Atoi(p); err != nil {
			return fmt.Errorf("port %q: %v", p, err)
		}
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}
