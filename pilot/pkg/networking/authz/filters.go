package authz

import (
	"fmt"
	"slices"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// Filter names (istiod's wellknown names).
const (
	RBACHTTPFilterName = "envoy.filters.http.rbac"
	RBACTCPFilterName  = "envoy.filters.network.rbac"
)

// shadowStatPrefix is istiod's shadowRuleStatPrefix. Like istiod it reads
// the action of a nil RBAC as ALLOW, so a filter without dry-run policies
// still carries "istio_dry_run_allow_" (harmless: no shadow rules, no
// stats).
func shadowStatPrefix(r *rbacv3.RBAC) string {
	switch r.GetAction() {
	case rbacv3.RBAC_ALLOW:
		return shadowAllowStatPrefix
	case rbacv3.RBAC_DENY:
		return shadowDenyStatPrefix
	}
	return ""
}

// denyAll is what a filter whose config cannot be packed becomes: it
// never serves wider than meant. Every part is validated on its own
// before, so this is a guard, not a path taken.
func denyAll(name string) *rbacv3.RBAC {
	return &rbacv3.RBAC{Action: rbacv3.RBAC_DENY, Policies: map[string]*rbacv3.Policy{
		name: {Permissions: []*rbacv3.Permission{permAny()}, Principals: []*rbacv3.Principal{principalAny()}},
	}}
}

func (b *builder) pack(m protoconv.Validatable, c *built, fallback func() protoconv.Validatable) *anypb.Any {
	a, err := protoconv.ValidatedAny(m)
	if err == nil {
		return a
	}
	for _, p := range c.policies {
		b.problem(p, "spec", fmt.Sprintf("the RBAC filter does not validate (%v): it denies every request instead", err), false)
	}
	a, err = protoconv.ValidatedAny(fallback())
	if err != nil {
		panic("authz: the deny-all RBAC filter does not validate: " + err.Error())
	}
	return a
}

func httpFilter(name string, a *anypb.Any) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}
}

func networkFilter(name string, a *anypb.Any) *listenerv3.Filter {
	return &listenerv3.Filter{Name: name, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
}

// localHTTP is istiod's buildHTTP for ALLOW, DENY and AUDIT.
func (b *builder) localHTTP(c *built) *hcmv3.HttpFilter {
	rbac := &rbachttpv3.RBAC{Rules: c.rules, ShadowRules: c.shadow, ShadowRulesStatPrefix: shadowStatPrefix(c.shadow)}
	return httpFilter(RBACHTTPFilterName, b.pack(rbac, c, func() protoconv.Validatable {
		return &rbachttpv3.RBAC{Rules: denyAll("invalid-authorization-policies")}
	}))
}

// localTCP is istiod's buildTCP for ALLOW, DENY and AUDIT.
func (b *builder) localTCP(c *built) *listenerv3.Filter {
	rbac := &rbactcpv3.RBAC{
		Rules: c.rules, StatPrefix: tcpStatPrefix,
		ShadowRules: c.shadow, ShadowRulesStatPrefix: shadowStatPrefix(c.shadow),
	}
	return networkFilter(RBACTCPFilterName, b.pack(rbac, c, func() protoconv.Validatable {
		return &rbactcpv3.RBAC{Rules: denyAll("invalid-authorization-policies"), StatPrefix: tcpStatPrefix}
	}))
}

// badCustomDeny is istiod's getBadCustomDenyRules: the CUSTOM rules,
// renamed, enforced as DENY.
func badCustomDeny(rules *rbacv3.RBAC) *rbacv3.RBAC {
	out := &rbacv3.RBAC{Action: rbacv3.RBAC_DENY, Policies: map[string]*rbacv3.Policy{}}
	for name, p := range rules.GetPolicies() {
		out.Policies[name+badCustomSuffix] = p
	}
	return out
}

// provider is istiod 1.29's getExtAuthz: every CUSTOM policy of the
// proxy must name the same provider, an ext_authz provider of the mesh
// config that can be built. Computed once per Build.
func (b *builder) provider(c *built) (*extAuthz, error) {
	if b.extDone {
		return b.ext, b.extErr
	}
	b.extDone = true
	b.ext, b.extErr = b.resolveProvider(c.providers)
	if b.extErr != nil {
		for _, p := range c.policies {
			b.problem(p, "spec.provider.name", fmt.Sprintf("%v: the policy's rules deny what they match instead", b.extErr), false)
		}
	}
	return b.ext, b.extErr
}

func (b *builder) resolveProvider(providers []string) (*extAuthz, error) {
	if len(providers) == 0 {
		return nil, fmt.Errorf("no provider specified in authorization policy")
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(providers)))
	if len(distinct) > 1 {
		return nil, fmt.Errorf("only 1 provider can be used per gateway, found multiple providers: [%s]", strings.Join(distinct, " "))
	}
	p, err := b.mesh.Provider(providers[0])
	if err != nil {
		return nil, err
	}
	clusters := b.clusters
	if clusters == nil {
		clusters = func(service string, port uint32) (string, error) {
			return "", fmt.Errorf("no service %s", service)
		}
	}
	return buildExtAuthz(p, clusters)
}

// customHTTP is istiod's buildHTTP for CUSTOM: an RBAC filter whose shadow
// rules mark the requests the CUSTOM policies match (Envoy writes the
// matching rule's name, istio-ext-authz-..., to dynamic metadata), then
// ext_authz, enabled only for marked requests. Dry-run CUSTOM policies
// are left out, as in istiod 1.29. A provider that cannot be served makes
// the rules an enforcing DENY.
func (b *builder) customHTTP(c *built) []*hcmv3.HttpFilter {
	ea, err := b.provider(c)
	if err != nil {
		rbac := &rbachttpv3.RBAC{Rules: badCustomDeny(c.rules)}
		return []*hcmv3.HttpFilter{httpFilter(RBACHTTPFilterName, b.pack(rbac, c, func() protoconv.Validatable {
			return &rbachttpv3.RBAC{Rules: denyAll("invalid-custom-authorization-policies")}
		}))}
	}
	rbac := &rbachttpv3.RBAC{ShadowRules: c.rules, ShadowRulesStatPrefix: extAuthzShadowStatPrefix}
	return []*hcmv3.HttpFilter{
		httpFilter(RBACHTTPFilterName, b.pack(rbac, c, func() protoconv.Validatable {
			return &rbachttpv3.RBAC{Rules: denyAll("invalid-custom-authorization-policies")}
		})),
		ea.http,
	}
}

// customTCP is istiod's buildTCP for CUSTOM; an HTTP provider gives TCP
// chains nothing, as in istiod.
func (b *builder) customTCP(c *built) []*listenerv3.Filter {
	ea, err := b.provider(c)
	if err != nil {
		rbac := &rbactcpv3.RBAC{Rules: badCustomDeny(c.rules), StatPrefix: tcpStatPrefix}
		return []*listenerv3.Filter{networkFilter(RBACTCPFilterName, b.pack(rbac, c, func() protoconv.Validatable {
			return &rbactcpv3.RBAC{Rules: denyAll("invalid-custom-authorization-policies"), StatPrefix: tcpStatPrefix}
		}))}
	}
	if ea.tcp == nil {
		for _, p := range c.policies {
			b.problem(p, "spec.provider.name", fmt.Sprintf("provider %q is an HTTP ext_authz provider: "+
				"the gateway's TCP and TLS passthrough chains are not checked by it, as in istiod", p.Spec.GetProvider().GetName()), true)
		}
		return nil
	}
	rbac := &rbactcpv3.RBAC{ShadowRules: c.rules, StatPrefix: tcpStatPrefix, ShadowRulesStatPrefix: extAuthzShadowStatPrefix}
	return []*listenerv3.Filter{
		networkFilter(RBACTCPFilterName, b.pack(rbac, c, func() protoconv.Validatable {
			return &rbactcpv3.RBAC{Rules: denyAll("invalid-custom-authorization-policies"), StatPrefix: tcpStatPrefix}
		})),
		ea.tcp,
	}
}
