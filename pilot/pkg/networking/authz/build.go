package authz

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// dryRunAnnotation marks a policy whose rules are evaluated and counted
// but not enforced (shadow rules).
const dryRunAnnotation = "istio.io/dry-run"

// Stat prefixes and the dynamic metadata key istiod uses (authz model).
const (
	shadowAllowStatPrefix = "istio_dry_run_allow_"
	shadowDenyStatPrefix  = "istio_dry_run_deny_"
	tcpStatPrefix         = "tcp."
	extAuthzMatchPrefix   = extAuthzPolicyPrefix
	badCustomSuffix       = "-deny-due-to-bad-CUSTOM-action"
)

// matchNever is the policy istiod gives a policy without rules: it
// matches nothing (so an ALLOW policy without rules allows nothing, and
// a DENY one denies nothing).
func matchNever() *rbacv3.Policy {
	return &rbacv3.Policy{
		Permissions: []*rbacv3.Permission{permNot(permAny())},
		Principals:  []*rbacv3.Principal{principalNot(principalAny())},
	}
}

// Build translates the AuthorizationPolicies that apply to in.Proxy into
// its RBAC and ext_authz filters, as istiod 1.29's authz builder does for
// a gateway. It never fails: what cannot be served is named in
// Result.Problems, and served narrower (ALLOW) or wider (DENY).
func Build(in Input) Result {
	m := in.Mesh
	if m == nil {
		m = mesh.Default()
	}
	root := in.RootNamespace
	if root == "" {
		root = m.Mesh.GetRootNamespace()
	}
	b := &builder{
		td:       append(trustDomains{m.Mesh.GetTrustDomain()}, m.Mesh.GetTrustDomainAliases()...),
		mesh:     m,
		clusters: in.Clusters,
		seen:     map[string]bool{},
	}
	sel := selectPolicies(in.Policies, root, in.Proxy)
	var r Result
	for _, p := range sel.all {
		r.Applied = append(r.Applied, keyOf(p))
	}
	for _, p := range sel.unknown {
		b.problem(p, "spec.action", fmt.Sprintf("unknown action %v: the policy is ignored, as in istiod", p.Spec.GetAction()), false)
	}
	if in.TrustedHops {
		b.warnIPBlocks(sel.all)
	}

	// CUSTOM: the RBAC filter that marks, then ext_authz (istiod's custom
	// builder), first on the chain.
	if len(sel.custom) > 0 {
		http := b.build(sel.custom, rbacv3.RBAC_DENY, true, false)
		r.CustomHTTPFilters = b.customHTTP(http)
		if in.TCP {
			tcp := b.build(sel.custom, rbacv3.RBAC_DENY, true, true)
			r.CustomTCPFilters = b.customTCP(tcp)
		}
	}
	// AUDIT, DENY, ALLOW: one RBAC filter each, in istiod's order.
	for _, group := range []struct {
		policies []Policy
		action   rbacv3.RBAC_Action
	}{
		{sel.audit, rbacv3.RBAC_LOG},
		{sel.deny, rbacv3.RBAC_DENY},
		{sel.allow, rbacv3.RBAC_ALLOW},
	} {
		if len(group.policies) == 0 {
			continue
		}
		r.HTTPFilters = append(r.HTTPFilters, b.localHTTP(b.build(group.policies, group.action, false, false)))
		if in.TCP {
			r.TCPFilters = append(r.TCPFilters, b.localTCP(b.build(group.policies, group.action, false, true)))
		}
	}
	if byRoute := selectRoutePolicies(in.Policies, in.Routes, sel.all); len(byRoute) > 0 {
		b.buildRoutes(&r, byRoute)
	}
	r.Problems = b.problems
	return r
}

// builder carries what every policy's translation shares.
type builder struct {
	td       trustDomains
	mesh     *mesh.Config
	clusters ClusterResolver
	problems []*config.Error
	seen     map[string]bool

	// The CUSTOM provider, resolved once for HTTP and TCP chains.
	extDone bool
	ext     *extAuthz
	extErr  error
}

func keyOf(p Policy) config.Key {
	return config.Key{Kind: schema.AuthorizationPolicy, Namespace: p.Namespace, Name: p.Name}
}

// problem records one problem once (HTTP and TCP passes meet the same).
func (b *builder) problem(p Policy, field, msg string, warning bool) {
	e := &config.Error{Key: keyOf(p), Field: field, Message: msg, Warning: warning}
	if s := e.Error(); !b.seen[s] {
		b.seen[s] = true
		b.problems = append(b.problems, e)
	}
}

// built is istiod's builtRule: the enforced and the dry-run (shadow)
// rules of one action, and for CUSTOM the providers its policies name.
type built struct {
	rules, shadow *rbacv3.RBAC
	providers     []string
	policies      []Policy
}

// dryRun is istiod's isDryRun: a value strconv.ParseBool refuses is
// reported and enforces.
func (b *builder) dryRun(p Policy) bool {
	v, ok := p.Annotations[dryRunAnnotation]
	if !ok {
		return false
	}
	d, err := strconv.ParseBool(v)
	if err != nil {
		b.problem(p, "metadata.annotations["+dryRunAnnotation+"]",
			fmt.Sprintf("%q is not a boolean: the policy is enforced, as in istiod", v), false)
	}
	return d
}

// policyName is istiod 1.29's: ns[NS]-policy[NAME]-rule[N], with
// "istio-ext-authz-" in front for CUSTOM, which ext_authz is gated on.
func policyName(ns, name string, rule int, custom bool) string {
	prefix := ""
	if custom {
		prefix = extAuthzMatchPrefix + "-"
	}
	return fmt.Sprintf("%sns[%s]-policy[%s]-rule[%d]", prefix, ns, name, rule)
}

// build is istiod's Builder.build for one action.
func (b *builder) build(policies []Policy, action rbacv3.RBAC_Action, custom, forTCP bool) *built {
	out := &built{
		rules:    &rbacv3.RBAC{Action: action, Policies: map[string]*rbacv3.Policy{}},
		shadow:   &rbacv3.RBAC{Action: action, Policies: map[string]*rbacv3.Policy{}},
		policies: policies,
	}
	hasEnforce, hasDryRun := false, false
	for _, p := range policies {
		target := out.rules
		if b.dryRun(p) {
			target = out.shadow
			hasDryRun = true
		} else {
			hasEnforce = true
		}
		if custom {
			out.providers = append(out.providers, p.Spec.GetProvider().GetName())
		}
		for i, rule := range p.Spec.GetRules() {
			if pol := b.rule(p, i, rule, action, custom, forTCP); pol != nil {
				target.Policies[policyName(p.Namespace, p.Name, i, custom)] = pol
			}
		}
		if len(p.Spec.GetRules()) == 0 {
			target.Policies[policyName(p.Namespace, p.Name, 0, custom)] = matchNever()
		}
	}
	if !hasEnforce {
		out.rules = nil
	}
	if !hasDryRun {
		out.shadow = nil
	}
	return out
}

// rule translates rule i of p, or returns nil when it must be left out
// (an ALLOW rule that cannot be translated: it allows nothing).
func (b *builder) rule(p Policy, i int, rule *securityv1beta1.Rule, action rbacv3.RBAC_Action, custom, forTCP bool) *rbacv3.Policy {
	base := fmt.Sprintf("spec.rules[%d]", i)
	if rule == nil {
		// istiod skips a nil rule; only Go callers can make one.
		b.problem(p, base, "rule is null: left out", false)
		return nil
	}
	m, unknown := newRuleModel(p.Namespace, rule, base)
	for _, u := range unknown {
		b.problem(p, u.field, fmt.Sprintf("unknown attribute %q: %s", u.key, consequence(action, custom, p, false)), false)
	}
	m.migrateTrustDomain(b.td)
	pol, failures, ok := m.generate(forTCP, action)
	for _, f := range failures {
		httpOnly := errors.Is(f.err, errHTTPOnly)
		if forTCP && !httpOnly {
			continue // reported by the HTTP pass
		}
		field := f.field
		if httpOnly {
			// The field, not each of its values, is what TCP cannot match.
			if i := strings.LastIndexByte(field, '['); i > 0 && strings.HasSuffix(field, "]") {
				field = field[:i]
			}
		}
		b.problem(p, field, fmt.Sprintf("%v: %s", f.err, consequence(action, custom, p, forTCP)), httpOnly)
	}
	if !ok || (len(unknown) > 0 && action == rbacv3.RBAC_ALLOW) {
		return nil
	}
	return pol
}

// consequence says what is served instead of what could not be.
func consequence(action rbacv3.RBAC_Action, custom bool, p Policy, forTCP bool) string {
	where := ""
	if forTCP {
		where = " on TCP filter chains"
	}
	switch {
	case custom:
		return fmt.Sprintf("left out%s, so the rule sends more requests to provider %q", where, p.Spec.GetProvider().GetName())
	case action == rbacv3.RBAC_ALLOW:
		return "the rule allows nothing" + where
	case action == rbacv3.RBAC_DENY:
		return "left out" + where + ", so the rule denies more"
	default:
		return "left out" + where + ", so the rule audits more"
	}
}

// warnIPBlocks warns, on a gateway that takes the client address from
// X-Forwarded-For or the PROXY protocol, about ipBlocks (the peer, most
// likely the load balancer) where remoteIpBlocks (the client) was likely
// meant.
func (b *builder) warnIPBlocks(policies []Policy) {
	for _, p := range policies {
		for i, r := range p.Spec.GetRules() {
			for j, f := range r.GetFrom() {
				s := f.GetSource()
				if len(s.GetIpBlocks()) > 0 || len(s.GetNotIpBlocks()) > 0 {
					field := fmt.Sprintf("spec.rules[%d].from[%d].source.ipBlocks", i, j)
					if len(s.GetIpBlocks()) == 0 {
						field = fmt.Sprintf("spec.rules[%d].from[%d].source.notIpBlocks", i, j)
					}
					b.problem(p, field, "matches the address of the peer (the proxy or load balancer in front of this gateway, "+
						"which uses trusted hops or the PROXY protocol); remoteIpBlocks matches the client's", true)
				}
			}
			for j, w := range r.GetWhen() {
				if w.GetKey() == attrSrcIP {
					b.problem(p, fmt.Sprintf("spec.rules[%d].when[%d].key", i, j), "source.ip matches the address of the peer "+
						"(the proxy or load balancer in front of this gateway); remote.ip matches the client's", true)
				}
			}
		}
	}
}
