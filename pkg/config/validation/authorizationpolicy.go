package validation

import (
	"strconv"

	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// dryRunAnnotation is istio.io/dry-run: an AuthorizationPolicy whose rules
// are evaluated and logged but not enforced.
const dryRunAnnotation = "istio.io/dry-run"

// authorizationPolicy checks a security.istio.io AuthorizationPolicy by
// istiod 1.29's ValidateAuthorizationPolicy and checkDryRunAnnotation
// (pkg/config/validation/validation.go) and the value checks of its
// pkg/config/security/security.go: one way of selecting workloads; a
// CUSTOM policy with rules and a provider, whose rules use no peer
// identity or request.auth attribute; a provider only with CUSTOM; DENY
// and CUSTOM with rules; every from.source and to.operation set and not
// empty, each value not empty; addresses and CIDRs, ports, service
// accounts, trust domains and path templates as istiod parses them; when
// conditions with a key istiod knows (securityKey) and values for it; the
// dry-run annotation a boolean on ALLOW and DENY alone.
//
// istiod's warning (a DENY rule of HTTP attributes only also denies TCP
// traffic) does not reject the object and is not reported. Beyond istiod,
// targetRefs may name a route (allowedSecurityTargetRefs). Stricter than
// istiod: an action number outside the enum (protojson lets it through),
// an address with an IPv6 zone (Envoy's CidrRange cannot hold one).
func (v *validator) authorizationPolicy(ap *securityv1beta1.AuthorizationPolicy, annotations map[string]string) {
	v.policySelection("spec", ap.GetSelector(), ap.GetTargetRef(), ap.GetTargetRefs(), allowedSecurityTargetRefs)
	action := ap.GetAction()
	actionKnown := v.checkEnum("spec.action", securityv1beta1.AuthorizationPolicy_Action_name, int32(action))

	if val, ok := annotations[dryRunAnnotation]; ok && actionKnown {
		f := key("metadata.annotations", dryRunAnnotation)
		switch action {
		case securityv1beta1.AuthorizationPolicy_ALLOW, securityv1beta1.AuthorizationPolicy_DENY:
			if _, err := strconv.ParseBool(val); err != nil {
				v.add(f, "invalid value %q: want true or false", val)
			}
		default:
			v.add(f, "%s supports only action ALLOW and DENY, found %v", dryRunAnnotation, action)
		}
	}

	custom := action == securityv1beta1.AuthorizationPolicy_CUSTOM
	switch {
	case custom && ap.Rules == nil:
		v.add("spec.rules", "CUSTOM action without rules is meaningless as it will never be triggered; "+
			"add an empty rule {} if you want it triggered for every request")
	case custom && ap.GetProvider().GetName() == "":
		v.add("spec.provider.name", "provider name must not be empty with action CUSTOM")
	case !custom && ap.GetProvider() != nil:
		v.add("spec.provider", "provider may be set only with action CUSTOM, found %v", action)
	}
	if action == securityv1beta1.AuthorizationPolicy_DENY && ap.Rules == nil {
		v.add("spec.rules", "DENY action without rules is meaningless as it will never be triggered; "+
			"add an empty rule {} if you want it triggered for every request")
	}
	for i, r := range ap.GetRules() {
		v.authzRule(at("spec.rules", i), r, custom)
	}
}

func (v *validator) authzRule(f string, r *securityv1beta1.Rule, custom bool) {
	if r == nil {
		v.add(f, "rule must not be null")
		return
	}
	if r.From != nil && len(r.From) == 0 {
		v.add(f+".from", "from must not be empty")
	}
	for i, from := range r.GetFrom() {
		ff := at(f+".from", i)
		switch {
		case from == nil:
			v.add(ff, "from must not be null")
		case from.GetSource() == nil:
			v.add(ff+".source", "source must be set")
		default:
			v.authzSource(ff+".source", from.GetSource(), custom)
		}
	}
	if r.To != nil && len(r.To) == 0 {
		v.add(f+".to", "to must not be empty")
	}
	for i, to := range r.GetTo() {
		tf := at(f+".to", i)
		switch {
		case to == nil:
			v.add(tf, "to must not be null")
		case to.GetOperation() == nil:
			v.add(tf+".operation", "operation must be set")
		default:
			v.authzOperation(tf+".operation", to.GetOperation())
		}
	}
	for i, c := range r.GetWhen() {
		v.authzCondition(at(f+".when", i), c, custom)
	}
}

// customUnsupportedSource are the source fields istiod refuses in a
// CUSTOM policy: the external authorizer is called before the peer and
// request identities are known.
func customUnsupportedSource(s *securityv1beta1.Source) []struct {
	name   string
	values []string
} {
	return []struct {
		name   string
		values []string
	}{
		{"namespaces", s.GetNamespaces()}, {"notNamespaces", s.GetNotNamespaces()},
		{"serviceAccounts", s.GetServiceAccounts()}, {"notServiceAccounts", s.GetNotServiceAccounts()},
		{"trustDomains", s.GetTrustDomains()}, {"notTrustDomains", s.GetNotTrustDomains()},
		{"principals", s.GetPrincipals()}, {"notPrincipals", s.GetNotPrincipals()},
		{"requestPrincipals", s.GetRequestPrincipals()}, {"notRequestPrincipals", s.GetNotRequestPrincipals()},
	}
}

func (v *validator) authzSource(f string, s *securityv1beta1.Source, custom bool) {
	if custom {
		for _, u := range customUnsupportedSource(s) {
			if len(u.values) > 0 {
				v.add(f+"."+u.name, "%s is not supported with action CUSTOM", u.name)
			}
		}
	}
	if len(s.GetPrincipals())+len(s.GetNotPrincipals())+len(s.GetNamespaces())+len(s.GetNotNamespaces()) > 0 &&
		len(s.GetServiceAccounts())+len(s.GetNotServiceAccounts()) > 0 {
		v.add(f, "serviceAccounts cannot be set with namespaces or principals")
	}
	lists := []struct {
		name   string
		values []string
		check  func(string) error
	}{
		{"principals", s.GetPrincipals(), nil},
		{"notPrincipals", s.GetNotPrincipals(), nil},
		{"requestPrincipals", s.GetRequestPrincipals(), nil},
		{"notRequestPrincipals", s.GetNotRequestPrincipals(), nil},
		{"namespaces", s.GetNamespaces(), nil},
		{"notNamespaces", s.GetNotNamespaces(), nil},
		{"ipBlocks", s.GetIpBlocks(), checkAuthzIP},
		{"notIpBlocks", s.GetNotIpBlocks(), checkAuthzIP},
		{"remoteIpBlocks", s.GetRemoteIpBlocks(), checkAuthzIP},
		{"notRemoteIpBlocks", s.GetNotRemoteIpBlocks(), checkAuthzIP},
		{"serviceAccounts", s.GetServiceAccounts(), checkServiceAccount},
		{"notServiceAccounts", s.GetNotServiceAccounts(), checkServiceAccount},
		{"trustDomains", s.GetTrustDomains(), checkTrustDomain},
		{"notTrustDomains", s.GetNotTrustDomains(), checkTrustDomain},
	}
	empty := true
	for _, l := range lists {
		if len(l.values) > 0 {
			empty = false
		}
		lf := f + "." + l.name
		if (l.name == "serviceAccounts" || l.name == "notServiceAccounts") && len(l.values) > maxServiceAccounts {
			// istiod's arbitrary bound on the configuration's size.
			v.add(lf, "may not have more than %d values, has %d", maxServiceAccounts, len(l.values))
		}
		v.authzValues(lf, l.values, l.check)
	}
	if empty {
		v.add(f, "source must not be empty: set at least one of its fields")
	}
}

func (v *validator) authzOperation(f string, op *securityv1beta1.Operation) {
	lists := []struct {
		name   string
		values []string
		check  func(string) error
	}{
		{"hosts", op.GetHosts(), nil},
		{"notHosts", op.GetNotHosts(), nil},
		{"ports", op.GetPorts(), checkAuthzPort},
		{"notPorts", op.GetNotPorts(), checkAuthzPort},
		{"methods", op.GetMethods(), nil},
		{"notMethods", op.GetNotMethods(), nil},
		{"paths", op.GetPaths(), checkPathTemplate},
		{"notPaths", op.GetNotPaths(), checkPathTemplate},
	}
	empty := true
	for _, l := range lists {
		if len(l.values) > 0 {
			empty = false
		}
		v.authzValues(f+"."+l.name, l.values, l.check)
	}
	if empty {
		v.add(f, "operation must not be empty: set at least one of its fields")
	}
}

// authzValues reports each empty value (istiod's CheckEmptyValues) and,
// with check, each value check refuses, at its index.
func (v *validator) authzValues(f string, values []string, check func(string) error) {
	for i, val := range values {
		switch {
		case val == "":
			v.add(at(f, i), "value must not be empty")
		case check != nil:
			v.addErr(at(f, i), check(val))
		}
	}
}

func (v *validator) authzCondition(f string, c *securityv1beta1.Condition, custom bool) {
	if c == nil {
		v.add(f, "condition must not be null")
		return
	}
	k := c.GetKey()
	if k == "" {
		v.add(f+".key", "key must not be empty")
		return
	}
	if len(c.GetValues()) == 0 && len(c.GetNotValues()) == 0 {
		v.add(f, "at least one of values or notValues must be set for key %s", k)
		return
	}
	check, err := securityKey(k)
	if err != nil {
		v.add(f+".key", "%v", err)
		return
	}
	if custom && customUnsupportedKey(k) {
		v.add(f+".key", "%s is not supported with action CUSTOM", k)
	}
	for _, l := range []struct {
		name   string
		values []string
	}{{"values", c.GetValues()}, {"notValues", c.GetNotValues()}} {
		if k == "source.serviceAccount" && len(l.values) > maxServiceAccounts {
			// istiod's CheckServiceAccount bound, as on from.source.
			v.add(f+"."+l.name, "may not have more than %d values, has %d", maxServiceAccounts, len(l.values))
		}
		v.authzValues(f+"."+l.name, l.values, check)
	}
}

// dryRunRefused is istiod's checkDryRunAnnotation for a kind other than
// AuthorizationPolicy: the annotation is refused, since nothing else has
// a dry-run mode and the author would believe the object is not enforced.
// (istiod refuses it on every kind; Wayfinder checks the security kinds.)
func (v *validator) dryRunRefused(c config.Config) {
	if _, ok := c.Annotations[dryRunAnnotation]; ok {
		v.add(key("metadata.annotations", dryRunAnnotation), "unsupported annotation on a %v: only an AuthorizationPolicy has a dry-run mode; remove it", c.Kind)
	}
}
