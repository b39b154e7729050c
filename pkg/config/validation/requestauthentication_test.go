package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

type ra = security.RequestAuthentication

// rsaJWKS is the key set of istiod's "jwks ok" case.
const rsaJWKS = `{ "keys":[ {"e":"AQAB","kid":"DHFbpoIUqrY8t2zpA2qXfCmr5VO5ZEr4RzHU_-envvQ","kty":"RSA",` +
	`"n":"xAE7eB6qugXyCAG3yhh7pkDkT65pHymX-P7KfIupjf59vsdo91bSP9C8H07pSAGQO1MV_xFj9VswgsCg4R6otmg5PV2He95lZdHtOcU5DXIg_pbhLdKXbi66GlVeK6ABZOUW3WYtnNHD-91gVuoeJT_DwtGGcp4ignkgXfkiEm4sw-4sfb4qdt5oLbyVpmW6x9cfa7vs2WTfURiCrBoUqgBo_-4WTiULmmHSGZHOjzwa8WtrtOQGsAFjIbno85jp6MnGGGZPYZbDAa_b3y5u-YpW7ypZrvD8BgtKVjgtQgZhLAGezMt0ua3DRrWnKqTZ0BJ_EyxOGuHJrLsn00fnMQ"}]}`

func baseRequestAuthentication() *ra {
	return &ra{
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "ingressgateway"}},
		JwtRules: []*security.JWTRule{{
			Issuer:               "https://issuer.example.com",
			Audiences:            []string{"api"},
			JwksUri:              "https://issuer.example.com:8443/.well-known/jwks.json",
			FromHeaders:          []*security.JWTHeader{{Name: "authorization", Prefix: "Bearer "}},
			FromParams:           []string{"token"},
			FromCookies:          []string{"session"},
			OutputClaimToHeaders: []*security.ClaimToHeader{{Header: "x-sub", Claim: "sub"}},
			Timeout:              durationpb.New(5e9),
		}},
	}
}

func jwt(mutate func(r *security.JWTRule)) func(*ra) {
	return func(r *ra) { mutate(r.JwtRules[0]) }
}

// TestRequestAuthentication follows istiod 1.29's
// ValidateRequestAuthentication and validateJwtRule rule by rule (its
// TestValidateRequestAuthentication cases where they apply); the cases
// marked "stricter" or "beyond istiod" say where Wayfinder differs.
func TestRequestAuthentication(t *testing.T) {
	runCases(t, schema.RequestAuthentication, baseRequestAuthentication, []testCase[ra]{
		{name: "base is valid"},
		{name: "empty spec is valid", mutate: func(r *ra) { *r = ra{} }},
		{name: "null rule is skipped as in istiod", mutate: func(r *ra) { r.JwtRules = append(r.JwtRules, nil) }},

		// Selection (validateOneOfSelectorType and friends).
		{name: "selector and targetRefs", mutate: func(r *ra) { r.TargetRefs = []*typev1beta1.PolicyTargetReference{gatewayRef("gw")} },
			want: []string{"spec"}, msg: "only one of selector, targetRef and targetRefs"},
		{name: "selector wildcard", mutate: func(r *ra) { r.Selector.MatchLabels = map[string]string{"app": "*"} },
			want: []string{`spec.selector.matchLabels["app"]`}, msg: "wildcards"},
		{name: "targetRefs to a Gateway, an HTTPRoute, a GRPCRoute and a VirtualService (beyond istiod)", mutate: func(r *ra) {
			r.Selector = nil
			r.TargetRefs = []*typev1beta1.PolicyTargetReference{gatewayRef("gw"),
				{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "r"},
				{Group: "gateway.networking.k8s.io", Kind: "GRPCRoute", Name: "g"},
				{Group: "networking.istio.io", Kind: "VirtualService", Name: "vs"}}
		}},
		{name: "targetRef to an Istio Gateway", mutate: func(r *ra) {
			r.Selector = nil
			r.TargetRef = &typev1beta1.PolicyTargetReference{Group: "networking.istio.io", Kind: "Gateway", Name: "gw"}
		}, want: []string{"spec.targetRef"}, msg: "HTTPRoute or GRPCRoute"},
		{name: "targetRef across namespaces", mutate: func(r *ra) {
			r.Selector = nil
			ref := gatewayRef("gw")
			ref.Namespace = "other"
			r.TargetRefs = []*typev1beta1.PolicyTargetReference{ref}
		}, want: []string{"spec.targetRefs[0].namespace"}, msg: "cross-namespace"},

		// validateJwtRule.
		{name: "empty audience", mutate: jwt(func(j *security.JWTRule) { j.Audiences = []string{"a", ""} }),
			want: []string{"spec.jwtRules[0].audiences[1]"}, msg: "audience must not be empty"},
		{name: "empty issuer and jwksUri", mutate: jwt(func(j *security.JWTRule) { j.Issuer, j.JwksUri = "", "" }),
			want: []string{"spec.jwtRules[0].issuer"}, msg: "issuer or jwksUri must be set"},
		{name: "empty issuer and set jwksUri", mutate: jwt(func(j *security.JWTRule) { j.Issuer = "" })},
		{name: "issuer alone", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "" })},
		{name: "jwksUri of another scheme", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "ftp://issuer.example.com/jwks" }),
			want: []string{"spec.jwtRules[0].jwksUri"}, msg: `URI scheme "ftp" is not supported`},
		{name: "jwksUri without scheme", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "issuer.example.com/jwks" }),
			want: []string{"spec.jwtRules[0].jwksUri"}, msg: `URI scheme ""`},
		{name: "jwksUri with a bad port", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "https://issuer.example.com:abc/jwks" }),
			want: []string{"spec.jwtRules[0].jwksUri"}, msg: "invalid port"},
		{name: "jwksUri that does not parse", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "http://[::1/jwks" }),
			want: []string{"spec.jwtRules[0].jwksUri"}, msg: "missing ']'"},
		{name: "jwksUri without host (stricter)", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "https:///jwks" }),
			want: []string{"spec.jwtRules[0].jwksUri"}, msg: "has no host"},
		{name: "http jwksUri with port", mutate: jwt(func(j *security.JWTRule) { j.JwksUri = "http://10.0.0.1:8080/jwks" })},
		{name: "jwks ok", mutate: jwt(func(j *security.JWTRule) { j.Jwks = rsaJWKS })},
		{name: "jwks of one key", mutate: jwt(func(j *security.JWTRule) {
			j.Jwks = `{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}`
		})},
		{name: "jwks of OKP and oct keys", mutate: jwt(func(j *security.JWTRule) {
			j.Jwks = `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},{"kty":"oct","k":"c2VjcmV0"}]}`
		})},
		{name: "empty key set parses as in istiod", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"keys":[]}` })},
		{name: "jwks error", mutate: jwt(func(j *security.JWTRule) { j.Jwks = "foo" }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "jwks parse error: not a JSON object"},
		{name: "jwks key without kty", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"keys":[{"n":"AQAB","e":"AQAB"}]}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "keys[0]: kty"},
		{name: "jwks unknown key type", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"kty":"DSA"}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: `invalid key type "DSA"`},
		{name: "jwks RSA key without n", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"keys":[{"kty":"RSA","e":"AQAB"}]}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "required field n is missing"},
		{name: "jwks EC key without y", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"kty":"EC","crv":"P-256","x":"AQAB"}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "required field y is missing"},
		{name: "jwks value not base64", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"kty":"RSA","n":"!!!","e":"AQAB"}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "field n is not base64url"},
		{name: "jwks keys not a list", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"keys":{"kty":"RSA"}}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "want a list of keys"},
		{name: "jwks null key", mutate: jwt(func(j *security.JWTRule) { j.Jwks = `{"keys":[null]}` }),
			want: []string{"spec.jwtRules[0].jwks"}, msg: "keys[0]: key must not be null"},
		{name: "null location header", mutate: jwt(func(j *security.JWTRule) { j.FromHeaders = []*security.JWTHeader{nil} }),
			want: []string{"spec.jwtRules[0].fromHeaders[0]"}, msg: "must not be null"},
		{name: "empty location header", mutate: jwt(func(j *security.JWTRule) { j.FromHeaders = append(j.FromHeaders, &security.JWTHeader{Prefix: "x"}) }),
			want: []string{"spec.jwtRules[0].fromHeaders[1].name"}, msg: "location header name must not be empty"},
		{name: "empty location param", mutate: jwt(func(j *security.JWTRule) { j.FromParams = []string{""} }),
			want: []string{"spec.jwtRules[0].fromParams[0]"}, msg: "query parameter must not be empty"},
		{name: "empty cookie", mutate: jwt(func(j *security.JWTRule) { j.FromCookies = []string{"a", ""} }),
			want: []string{"spec.jwtRules[0].fromCookies[1]"}, msg: "cookie name must not be empty"},
		{name: "null outputClaimToHeaders", mutate: jwt(func(j *security.JWTRule) { j.OutputClaimToHeaders = []*security.ClaimToHeader{nil} }),
			want: []string{"spec.jwtRules[0].outputClaimToHeaders[0]"}, msg: "must not be null"},
		{name: "outputClaimToHeaders without claim or header", mutate: jwt(func(j *security.JWTRule) {
			j.OutputClaimToHeaders = []*security.ClaimToHeader{{Header: "x-a"}, {Claim: "sub"}}
		}), want: []string{"spec.jwtRules[0].outputClaimToHeaders[0].claim", "spec.jwtRules[0].outputClaimToHeaders[1].header"}, msg: "claim must not be empty"},
		{name: "outputClaimToHeaders to a header istiod refuses", mutate: jwt(func(j *security.JWTRule) {
			j.OutputClaimToHeaders = []*security.ClaimToHeader{{Header: "x:sub", Claim: "sub"}, {Header: ":authority", Claim: "iss"}}
		}), want: []string{"spec.jwtRules[0].outputClaimToHeaders[0].header", "spec.jwtRules[0].outputClaimToHeaders[1].header"}, msg: "x:sub is not a valid header name"},
		{name: "outputClaimToHeaders with nested claim", mutate: jwt(func(j *security.JWTRule) {
			j.OutputClaimToHeaders = []*security.ClaimToHeader{{Header: "X_Team-1", Claim: "my.team"}}
		})},
		{name: "timeout below 1ms", mutate: jwt(func(j *security.JWTRule) { j.Timeout = durationpb.New(0) }),
			want: []string{"spec.jwtRules[0].timeout"}, msg: "at least 1ms"},
		{name: "timeout not in ms", mutate: jwt(func(j *security.JWTRule) { j.Timeout = durationpb.New(1500000) }),
			want: []string{"spec.jwtRules[0].timeout"}, msg: "whole number of milliseconds"},
		{name: "problems in two rules", mutate: func(r *ra) {
			r.JwtRules = append(r.JwtRules, &security.JWTRule{Audiences: []string{""}})
			r.JwtRules[0].FromParams = []string{""}
		}, want: []string{"spec.jwtRules[0].fromParams[0]", "spec.jwtRules[1].audiences[0]", "spec.jwtRules[1].issuer"}, msg: "query parameter"},
	})
}

// A RequestAuthentication has no dry-run mode: istiod's
// checkDryRunAnnotation refuses the annotation on it.
func TestRequestAuthenticationDryRunRefused(t *testing.T) {
	c := config.Config{Meta: config.Meta{Kind: schema.RequestAuthentication, Name: "jwt", Namespace: "edge",
		Annotations: map[string]string{"istio.io/dry-run": "true"}}, Spec: baseRequestAuthentication()}
	err := validation.Validate(c)
	if err == nil || !strings.Contains(err.Error(), `metadata.annotations["istio.io/dry-run"]: unsupported annotation`) {
		t.Fatalf("Validate = %v", err)
	}
}
