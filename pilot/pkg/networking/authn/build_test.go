package authn

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/jwks"
)

// The server's resolver is what Input.JWKS takes.
var _ JWKSResolver = (*jwks.Resolver)(nil)

func jwtConfig(t *testing.T, r Result) *jwtv3.JwtAuthentication {
	t.Helper()
	if len(r.Filters) != 1 {
		t.Fatalf("got %d filters, want 1", len(r.Filters))
	}
	cfg := &jwtv3.JwtAuthentication{}
	if err := r.Filters[0].GetTypedConfig().UnmarshalTo(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func gatewayInput(rule *securityv1beta1.JWTRule) Input {
	return Input{
		RootNamespace: "istio-system",
		Proxy:         policyattach.Proxy{Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}},
		Policies: []RequestAuthentication{{
			Name: "jwt", Namespace: "istio-system",
			Spec: &securityv1beta1.RequestAuthentication{JwtRules: []*securityv1beta1.JWTRule{rule}},
		}},
	}
}

// TestWithRealResolver builds against pkg/jwks fetching from a JWKS server
// on 127.0.0.1: the served key set is inlined; once the server fails and the
// entry is dropped, the rule is served with PublicOnlyJWKS.
func TestWithRealResolver(t *testing.T) {
	const keys = `{"keys":[{"kty":"RSA","kid":"k","e":"AQAB","n":"Zm9v"}]}`
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(keys))
	}))
	defer srv.Close()
	res := jwks.New(jwks.Options{Logger: slog.New(slog.DiscardHandler)})

	in := gatewayInput(&securityv1beta1.JWTRule{Issuer: "https://issuer", JwksUri: srv.URL + "/keys"})
	in.JWKS = res
	r := Build(in)
	if got := jwtConfig(t, r).Providers["origins-0"].GetLocalJwks().GetInlineString(); got != keys {
		t.Fatalf("inlined %q, want the served key set", got)
	}
	if len(r.Problems) != 0 {
		t.Fatalf("problems: %v", r.Problems)
	}

	status.Store(http.StatusInternalServerError)
	in = gatewayInput(&securityv1beta1.JWTRule{Issuer: "https://other", JwksUri: srv.URL + "/other"})
	in.JWKS = res
	r = Build(in)
	if got := jwtConfig(t, r).Providers["origins-0"].GetLocalJwks().GetInlineString(); got != jwks.PublicOnlyJWKS {
		t.Fatalf("inlined %q, want PublicOnlyJWKS", got)
	}
	if len(r.Problems) != 1 || !r.Problems[0].Warning || !strings.Contains(r.Problems[0].Error(), "status 500") {
		t.Fatalf("problems = %v, want one warning with the status", r.Problems)
	}
}

// TestOrderOfInputDoesNotMatter: policies in any order give the same bytes.
func TestOrderOfInputDoesNotMatter(t *testing.T) {
	mk := func(name, issuer string, created int) RequestAuthentication {
		return RequestAuthentication{
			Name: name, Namespace: "gw", CreationTime: time.Unix(int64(created), 0),
			Spec: &securityv1beta1.RequestAuthentication{JwtRules: []*securityv1beta1.JWTRule{
				{Issuer: issuer, Jwks: `{"keys":[{"kty":"oct","k":"eA"}]}`},
			}},
		}
	}
	policies := []RequestAuthentication{mk("a", "https://same", 1), mk("b", "https://same", 1), mk("c", "https://x", 0), mk("d", "https://same", 0)}
	in := Input{RootNamespace: "istio-system", Proxy: policyattach.Proxy{Namespace: "gw"}, Policies: policies}
	want := Build(in).Filters[0].GetTypedConfig().GetValue()
	rev := slices.Clone(policies)
	slices.Reverse(rev)
	in.Policies = rev
	if got := Build(in).Filters[0].GetTypedConfig().GetValue(); !bytes.Equal(got, want) {
		t.Fatal("reversed input gave different output")
	}
}

// TestRouteTargetOnGatewayIsGatewayLevel: a policy with a targetRef to the
// proxy's Gateway and one to a route applies to the whole gateway.
func TestRouteTargetOnGatewayIsGatewayLevel(t *testing.T) {
	in := Input{
		RootNamespace: "istio-system",
		Proxy:         policyattach.Proxy{Namespace: "gw", GatewayName: "public"},
		Routes:        []policyattach.RouteRef{{Kind: policyattach.HTTPRoute, Namespace: "gw", Name: "r"}},
		Policies: []RequestAuthentication{{
			Name: "p", Namespace: "gw",
			Spec: &securityv1beta1.RequestAuthentication{
				TargetRefs: []*typev1beta1.PolicyTargetReference{
					{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "public"},
					{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "r"},
				},
				JwtRules: []*securityv1beta1.JWTRule{{Issuer: "i", Jwks: `{"keys":[]}`}},
			},
		}},
	}
	r := Build(in)
	cfg := jwtConfig(t, r)
	if len(cfg.Rules) != 1 || len(cfg.RequirementMap) != 0 || len(r.RouteRequirements) != 0 {
		t.Fatalf("rules %d, requirement map %d, route requirements %v: want gateway-level only",
			len(cfg.Rules), len(cfg.RequirementMap), r.RouteRequirements)
	}
}

func TestPerRouteConfig(t *testing.T) {
	a, err := PerRouteConfig("route/HTTPRoute/ns/r")
	if err != nil {
		t.Fatal(err)
	}
	pr := &jwtv3.PerRouteConfig{}
	if err := a.UnmarshalTo(pr); err != nil {
		t.Fatal(err)
	}
	if pr.GetRequirementName() != "route/HTTPRoute/ns/r" {
		t.Fatalf("requirement name %q", pr.GetRequirementName())
	}
}

func TestNilSpecIsSkipped(t *testing.T) {
	in := Input{Proxy: policyattach.Proxy{Namespace: "gw"}, Policies: []RequestAuthentication{{Name: "x", Namespace: "gw"}}}
	if r := Build(in); len(r.Filters) != 0 || len(r.Applied) != 0 {
		t.Fatalf("got %+v", r)
	}
}

// TestRoutePolicyOnSharedGatewayOfAnotherNamespace: a team's policy in its
// route's namespace applies to that route on a gateway deployed elsewhere,
// without touching the gateway's own configuration.
func TestRoutePolicyOnSharedGatewayOfAnotherNamespace(t *testing.T) {
	in := Input{
		RootNamespace: "istio-system",
		Proxy:         policyattach.Proxy{Namespace: "infra", GatewayName: "shared"},
		Routes:        []policyattach.RouteRef{{Kind: policyattach.HTTPRoute, Namespace: "shop", Name: "cart"}, {Kind: policyattach.HTTPRoute, Namespace: "blog", Name: "posts"}},
		Policies: []RequestAuthentication{{
			Name: "cart-jwt", Namespace: "shop",
			Spec: &securityv1beta1.RequestAuthentication{
				TargetRefs: []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "cart"}},
				JwtRules:   []*securityv1beta1.JWTRule{{Issuer: "https://shop", Jwks: `{"keys":[]}`}},
			},
		}},
	}
	r := Build(in)
	cfg := jwtConfig(t, r)
	if len(cfg.Rules) != 0 {
		t.Errorf("gateway-level rules %v, want none (the policy is route-level)", cfg.Rules)
	}
	want := map[policyattach.RouteRef]string{{Kind: policyattach.HTTPRoute, Namespace: "shop", Name: "cart"}: "route/HTTPRoute/shop/cart"}
	if len(r.RouteRequirements) != 1 || r.RouteRequirements[policyattach.RouteRef{Kind: policyattach.HTTPRoute, Namespace: "shop", Name: "cart"}] != want[policyattach.RouteRef{Kind: policyattach.HTTPRoute, Namespace: "shop", Name: "cart"}] {
		t.Fatalf("route requirements %v, want %v", r.RouteRequirements, want)
	}
	if _, ok := cfg.RequirementMap["route/HTTPRoute/shop/cart"]; !ok {
		t.Fatalf("requirement map %v lacks the route", cfg.RequirementMap)
	}
}
