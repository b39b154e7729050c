package authz

import (
	"fmt"
	"strings"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"
)

// The attribute names of `when` conditions (istiod's
// pilot/pkg/security/authz/model/model.go).
const (
	attrRequestHeader     = "request.headers"
	attrSrcIP             = "source.ip"
	attrRemoteIP          = "remote.ip"
	attrSrcNamespace      = "source.namespace"
	attrSrcServiceAccount = "source.serviceAccount"
	attrSrcTrustDomain    = "source.trustDomain"
	attrSrcPrincipal      = "source.principal"
	attrRequestPrincipal  = "request.auth.principal"
	attrRequestAudiences  = "request.auth.audiences"
	attrRequestPresenter  = "request.auth.presenter"
	attrRequestClaims     = "request.auth.claims"
	attrDestIP            = "destination.ip"
	attrDestPort          = "destination.port"
	attrConnSNI           = "connection.sni"
	attrEnvoyFilter       = "experimental.envoy.filters."
)

// condition is one attribute of a rule with its values and not-values
// (istiod's model.rule), and where they are written in the policy, for
// problems. Exactly one generator is set.
type condition struct {
	key               string
	values, notValues []string
	field, notField   string
	perm              permGen
	permList          permListGen
	princ             princGen
	princList         princListGen
}

// conditions is istiod's ruleList: AND-ed. Its elements are shared
// between the from (and to) entries of one rule, as in istiod, which
// matters for trust domain migration (see migrateTrustDomain).
type conditions []*condition

// ruleModel is istiod's authz model.Model: one rule's permissions (one
// per `to`, OR-ed) and principals (one per `from`, OR-ed).
type ruleModel struct {
	permissions []conditions
	principals  []conditions
}

// unknownKey is a `when` condition istiod's model.New refuses.
type unknownKey struct {
	field string
	key   string
}

// newRuleModel is istiod's model.New for rule r of a policy of namespace
// ns, whose fields are under base ("spec.rules[I]"). A `when` key it
// does not know is returned in unknown and left out of the model: the
// caller decides (istiod skips the rule; for ALLOW so does Wayfinder, for
// the other actions leaving the condition out is the wider match).
func newRuleModel(ns string, r *securityv1beta1.Rule, base string) (*ruleModel, []unknownKey) {
	var basePerm, basePrinc conditions
	var unknown []unknownKey
	add := func(list *conditions, c *condition) {
		if len(c.values) == 0 && len(c.notValues) == 0 {
			return
		}
		*list = append(*list, c)
	}
	for j, w := range r.GetWhen() {
		k := w.GetKey()
		f := fmt.Sprintf("%s.when[%d]", base, j)
		c := &condition{key: k, values: w.GetValues(), notValues: w.GetNotValues(), field: f + ".values", notField: f + ".notValues"}
		switch {
		case k == attrDestIP:
			c.perm = genDestIP
		case k == attrDestPort:
			c.perm = genDestPort
		case k == attrConnSNI:
			c.perm = genSNI
		case strings.HasPrefix(k, attrEnvoyFilter):
			c.permList = genEnvoyFilter
		case k == attrSrcIP:
			c.princ = genSrcIP
		case k == attrRemoteIP:
			c.princ = genRemoteIP
		case k == attrSrcNamespace:
			c.princ = genSrcNamespace
		case k == attrSrcTrustDomain:
			c.princ = genSrcTrustDomain
		case k == attrSrcServiceAccount:
			c.princ = genSrcServiceAccount(ns)
		case k == attrSrcPrincipal:
			c.princ = genSrcPrincipal
		case k == attrRequestPrincipal:
			c.princList = genRequestPrincipal
		case k == attrRequestAudiences:
			c.princList = genClaimList("aud")
		case k == attrRequestPresenter:
			c.princList = genClaimList("azp")
		case strings.HasPrefix(k, attrRequestHeader):
			c.princ = genRequestHeader
		case strings.HasPrefix(k, attrRequestClaims):
			c.princList = genRequestClaim
		default:
			unknown = append(unknown, unknownKey{field: f + ".key", key: k})
			continue
		}
		if c.princ != nil || c.princList != nil {
			add(&basePrinc, c)
		} else {
			add(&basePerm, c)
		}
	}

	m := &ruleModel{}
	for j, from := range r.GetFrom() {
		merged := append(conditions{}, basePrinc...)
		if s := from.GetSource(); s != nil {
			f := fmt.Sprintf("%s.from[%d].source.", base, j)
			front := func(g princGen, gl princListGen, key, name, notName string, values, notValues []string) {
				if len(values) == 0 && len(notValues) == 0 {
					return
				}
				c := &condition{key: key, values: values, notValues: notValues, field: f + name, notField: f + notName, princ: g, princList: gl}
				merged = append(conditions{c}, merged...)
			}
			front(genSrcIP, nil, attrSrcIP, "ipBlocks", "notIpBlocks", s.GetIpBlocks(), s.GetNotIpBlocks())
			front(genRemoteIP, nil, attrRemoteIP, "remoteIpBlocks", "notRemoteIpBlocks", s.GetRemoteIpBlocks(), s.GetNotRemoteIpBlocks())
			front(genSrcNamespace, nil, attrSrcNamespace, "namespaces", "notNamespaces", s.GetNamespaces(), s.GetNotNamespaces())
			front(genSrcTrustDomain, nil, attrSrcTrustDomain, "trustDomains", "notTrustDomains", s.GetTrustDomains(), s.GetNotTrustDomains())
			front(genSrcServiceAccount(ns), nil, attrSrcServiceAccount, "serviceAccounts", "notServiceAccounts", s.GetServiceAccounts(), s.GetNotServiceAccounts())
			front(nil, genRequestPrincipal, attrRequestPrincipal, "requestPrincipals", "notRequestPrincipals", s.GetRequestPrincipals(), s.GetNotRequestPrincipals())
			front(genSrcPrincipal, nil, attrSrcPrincipal, "principals", "notPrincipals", s.GetPrincipals(), s.GetNotPrincipals())
		}
		m.principals = append(m.principals, merged)
	}
	if len(r.GetFrom()) == 0 {
		m.principals = append(m.principals, basePrinc)
	}

	for j, to := range r.GetTo() {
		merged := append(conditions{}, basePerm...)
		if o := to.GetOperation(); o != nil {
			f := fmt.Sprintf("%s.to[%d].operation.", base, j)
			front := func(g permGen, key, name, notName string, values, notValues []string) {
				if len(values) == 0 && len(notValues) == 0 {
					return
				}
				c := &condition{key: key, values: values, notValues: notValues, field: f + name, notField: f + notName, perm: g}
				merged = append(conditions{c}, merged...)
			}
			front(genDestPort, attrDestPort, "ports", "notPorts", o.GetPorts(), o.GetNotPorts())
			front(genPath, "paths", "paths", "notPaths", o.GetPaths(), o.GetNotPaths())
			front(genMethod, "methods", "methods", "notMethods", o.GetMethods(), o.GetNotMethods())
			front(genHost, "hosts", "hosts", "notHosts", o.GetHosts(), o.GetNotHosts())
		}
		m.permissions = append(m.permissions, merged)
	}
	if len(r.GetTo()) == 0 {
		m.permissions = append(m.permissions, basePerm)
	}
	return m, unknown
}

// migrateTrustDomain is istiod's Model.MigrateTrustDomain. As in istiod
// it rewrites conditions in place, and a `when` condition is shared by
// every `from` entry, so it is rewritten once per entry; the rewriting
// only ever adds equivalent principals.
func (m *ruleModel) migrateTrustDomain(td trustDomains) {
	for _, list := range m.principals {
		for _, c := range list {
			switch c.key {
			case attrSrcPrincipal:
				if len(c.values) != 0 {
					c.values = td.replaceAliases(c.values)
				}
				if len(c.notValues) != 0 {
					c.notValues = td.replaceAliases(c.notValues)
				}
			case attrSrcTrustDomain:
				if len(c.values) != 0 {
					c.values = td.expandAliases(c.values)
				}
				if len(c.notValues) != 0 {
					c.notValues = td.expandAliases(c.notValues)
				}
			}
		}
	}
}

// failure is one value (or list) that could not be generated.
type failure struct {
	field string
	err   error
}

// generate is istiod's Model.Generate. Where istiod stops at the first
// error of an ALLOW rule, this goes on to collect every failure (the
// rule is dropped all the same: ok is false); for the other actions a
// failing value is left out, istiod's checkError, which widens what the
// rule matches.
func (m *ruleModel) generate(forTCP bool, action rbacv3.RBAC_Action) (policy *rbacv3.Policy, failures []failure, ok bool) {
	var perms []*rbacv3.Permission
	for _, list := range m.permissions {
		var and []*rbacv3.Permission
		for _, c := range list {
			and = append(and, c.permission(forTCP, &failures)...)
		}
		if len(and) == 0 {
			and = append(and, permAny())
		}
		perms = append(perms, permAnd(and))
	}
	var princs []*rbacv3.Principal
	for _, list := range m.principals {
		var and []*rbacv3.Principal
		for _, c := range list {
			and = append(and, c.principal(forTCP, &failures)...)
		}
		if len(and) == 0 {
			and = append(and, principalAny())
		}
		princs = append(princs, principalAnd(and))
	}
	if action == rbacv3.RBAC_ALLOW && len(failures) > 0 {
		return nil, failures, false
	}
	return &rbacv3.Policy{Permissions: perms, Principals: princs}, failures, true
}

// validatable is a generated matcher: checked on its own so that one bad
// value is dropped by the action's rule instead of failing the filter.
type validatable interface{ ValidateAll() error }

func check[T validatable](v T, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if m, ok := any(v).(proto.Message); ok && m.ProtoReflect().IsValid() {
		if verr := v.ValidateAll(); verr != nil {
			return zero, fmt.Errorf("cannot be expressed in Envoy: %v", verr)
		}
		if rerr := checkRegexes(m); rerr != nil {
			return zero, fmt.Errorf("cannot be expressed in Envoy: %v", rerr)
		}
	}
	return v, nil
}

func (c *condition) permission(forTCP bool, failures *[]failure) []*rbacv3.Permission {
	return sides(c, c.perm, c.permList, permNot, permOr, forTCP, failures)
}

func (c *condition) principal(forTCP bool, failures *[]failure) []*rbacv3.Principal {
	return sides(c, c.princ, c.princList, principalNot, principalOr, forTCP, failures)
}

// sides builds c's values and notValues as one kind of matcher (istiod's
// generator for a key): from the whole list at once when the key has a
// list generator (one failure names the list), else value by value, OR-ed
// (a failure names the value); notValues are negated. What fails is left
// out and recorded in failures.
func sides[T validatable](c *condition, one func(key, value string, forTCP bool) (T, error),
	list func(key string, values []string, forTCP bool) (T, error), not func(T) T, or func([]T) T,
	forTCP bool, failures *[]failure,
) []T {
	var out []T
	if list != nil {
		for _, side := range []struct {
			values []string
			field  string
			not    bool
		}{{c.values, c.field, false}, {c.notValues, c.notField, true}} {
			if len(side.values) == 0 {
				continue
			}
			p, err := check(list(c.key, side.values, forTCP))
			if err != nil {
				*failures = append(*failures, failure{side.field, err})
				continue
			}
			if !isNil(p) {
				if side.not {
					p = not(p)
				}
				out = append(out, p)
			}
		}
		return out
	}
	gen := func(values []string, field string) []T {
		var alts []T
		for i, v := range values {
			p, err := check(one(c.key, v, forTCP))
			if err != nil {
				*failures = append(*failures, failure{fmt.Sprintf("%s[%d]", field, i), err})
				continue
			}
			if !isNil(p) {
				alts = append(alts, p)
			}
		}
		return alts
	}
	if ors := gen(c.values, c.field); len(ors) > 0 {
		out = append(out, or(ors))
	}
	if ors := gen(c.notValues, c.notField); len(ors) > 0 {
		out = append(out, not(or(ors)))
	}
	return out
}

// isNil reports a nil matcher pointer (a generator that has nothing to
// match).
func isNil[T any](v T) bool {
	var zero T
	return any(v) == any(zero)
}
