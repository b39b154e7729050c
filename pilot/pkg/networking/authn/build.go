package authn

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Build translates the RequestAuthentications that apply to in.Proxy into
// its jwt_authn filter, as istiod's authn policy applier
// (pilot/pkg/security/authn/policy_applier.go convertToEnvoyJwtConfig) does
// for a gateway, plus the route-level requirements described in the
// package comment.
func Build(in Input) Result {
	var res Result
	b := &builder{in: in, res: &res}
	gw, byRoute := b.selectPolicies()

	filter := &jwtv3.JwtAuthentication{Providers: map[string]*jwtv3.JwtProvider{}, BypassCorsPreflight: true}
	gwRules := sortedRules(gw)
	var gwNames []string
	for i, r := range gwRules {
		name := fmt.Sprintf("origins-%d", i)
		filter.Providers[name] = b.provider(r)
		gwNames = append(gwNames, name)
		r.provider = name
	}
	for _, p := range gw {
		res.Applied = append(res.Applied, p.Key())
	}
	if len(gwNames) > 0 {
		filter.Rules = []*jwtv3.RequirementRule{{
			Match:           &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			RequirementType: &jwtv3.RequirementRule_Requires{Requires: requirement(gwNames)},
		}}
	}

	b.routeRequirements(filter, gwRules, byRoute)

	if len(filter.Providers) > 0 {
		res.Filters = []*hcmv3.HttpFilter{{
			Name:       FilterName,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(filter)},
		}}
	}
	slices.SortStableFunc(res.Problems, func(a, b *config.Error) int {
		return cmp.Or(cmp.Compare(a.Key.String(), b.Key.String()), cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Message, b.Message))
	})
	return res
}

type builder struct {
	in  Input
	res *Result
}

// selectPolicies returns the gateway-level policies in istiod's order
// (getConfigsForWorkload: the proxy's namespace, then the root namespace,
// each oldest first) and, for each served route, its own policies.
func (b *builder) selectPolicies() (gw []RequestAuthentication, byRoute map[policyattach.RouteRef][]RequestAuthentication) {
	ordered := policyattach.SortByCreation(b.in.Policies)
	served := map[policyattach.RouteRef]bool{}
	for _, r := range b.in.Routes {
		served[r] = true
	}
	byRoute = map[policyattach.RouteRef][]RequestAuthentication{}
	var root []RequestAuthentication
	for _, p := range ordered {
		if p.Spec == nil {
			continue
		}
		inScope := p.Namespace == b.in.Proxy.Namespace || p.Namespace == b.in.RootNamespace
		if inScope && policyattach.Selects(b.in.Proxy, p.Namespace, p.Spec) {
			if p.Namespace == b.in.Proxy.Namespace {
				gw = append(gw, p)
			} else {
				root = append(root, p)
			}
			continue
		}
		for _, ref := range routeTargets(p) {
			if served[ref] && !slices.ContainsFunc(byRoute[ref], func(q RequestAuthentication) bool { return q.Key() == p.Key() }) {
				byRoute[ref] = append(byRoute[ref], p)
			}
		}
	}
	return append(gw, root...), byRoute
}

// routeTargets are the routes p targets: HTTPRoutes, GRPCRoutes and
// VirtualServices of p's own namespace.
func routeTargets(p RequestAuthentication) []policyattach.RouteRef {
	return policyattach.RouteTargets(p.Namespace, p.Spec)
}

// rule is one jwtRule and where it came from.
type rule struct {
	policy RequestAuthentication
	index  int
	spec   *securityv1beta1.JWTRule
	// provider is the name it was given in the filter.
	provider string
}

func (r *rule) field(sub string) string {
	f := fmt.Sprintf("spec.jwtRules[%d]", r.index)
	if sub != "" {
		f += "." + sub
	}
	return f
}

// sortedRules is istiod's processedJwtRules: every rule of every policy
// in order, then sorted by issuer. istiod's sort is not stable; this one
// is, so rules of one issuer keep the policies' order.
func sortedRules(policies []RequestAuthentication) []*rule {
	var out []*rule
	for _, p := range policies {
		for i, r := range p.Spec.GetJwtRules() {
			if r == nil {
				continue
			}
			out = append(out, &rule{policy: p, index: i, spec: r})
		}
	}
	slices.SortStableFunc(out, func(a, b *rule) int { return cmp.Compare(a.spec.GetIssuer(), b.spec.GetIssuer()) })
	return out
}

// requirement is istiod's: one provider, {provider OR allow_missing}; more,
// OR{P1, P2, ..., AND{OR{P1, allow_missing}, OR{P2, allow_missing}, ...}},
// where the AND makes every token present valid and the single providers
// cover providers that share a token location (the AND alone would always
// fail for them).
func requirement(names []string) *jwtv3.JwtRequirement {
	if len(names) == 0 {
		return nil
	}
	var inner, outer []*jwtv3.JwtRequirement
	for _, n := range names {
		inner = append(inner, anyOf(providerReq(n), allowMissing()))
		outer = append(outer, providerReq(n))
	}
	if len(inner) == 1 {
		return inner[0]
	}
	outer = append(outer, &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAll{
		RequiresAll: &jwtv3.JwtRequirementAndList{Requirements: inner},
	}})
	return anyOf(outer...)
}

func providerReq(name string) *jwtv3.JwtRequirement {
	return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: name}}
}

func allowMissing() *jwtv3.JwtRequirement {
	return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_AllowMissing{AllowMissing: &emptypb.Empty{}}}
}

func anyOf(reqs ...*jwtv3.JwtRequirement) *jwtv3.JwtRequirement {
	return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAny{
		RequiresAny: &jwtv3.JwtRequirementOrList{Requirements: reqs},
	}}
}

func (b *builder) problem(r *rule, sub, format string, args ...any) {
	b.res.Problems = append(b.res.Problems, &config.Error{
		Key: r.policy.Key(), Field: r.field(sub), Message: fmt.Sprintf(format, args...),
	})
}

func (b *builder) warning(r *rule, sub, format string, args ...any) {
	b.res.Problems = append(b.res.Problems, &config.Error{
		Key: r.policy.Key(), Field: r.field(sub), Message: fmt.Sprintf(format, args...), Warning: true,
	})
}

func mustAny(m *jwtv3.JwtAuthentication) *anypb.Any {
	a, err := protoconv.Any(m)
	if err != nil {
		// Only a message that cannot be marshalled fails, which a
		// generated Envoy type never is.
		panic(fmt.Sprintf("authn: packing jwt_authn config: %v", err))
	}
	return a
}

// routeName is the requirement_map key of a route's requirement.
func routeName(r policyattach.RouteRef) string {
	return strings.Join([]string{"route", string(r.Kind), r.Namespace, r.Name}, "/")
}
