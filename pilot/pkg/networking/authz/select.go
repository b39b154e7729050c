package authz

import (
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
)

// byAction is istiod's AuthorizationPoliciesResult.
type byAction struct {
	custom, deny, allow, audit []Policy
	// all is every applied policy, in order.
	all []Policy
	// unknown are policies whose action istiod does not know.
	unknown []Policy
}

// sortByCreation is istiod's sortConfigByCreationTime
// (policyattach.SortByCreation).
func sortByCreation(in []Policy) []Policy { return policyattach.SortByCreation(in) }

// selectPolicies is istiod's AuthorizationPolicies.ListAuthorizationPolicies
// for a gateway: the policies of the root namespace, then of the proxy's
// namespace, each in creation order, that attach to the proxy
// (WorkloadPolicyMatcher.ShouldAttachPolicy). Unlike Telemetry, a root
// namespace policy is not namespace-wide only: its selector matches
// workloads of every namespace, and one without selector applies to all.
func selectPolicies(policies []Policy, root string, p policyattach.Proxy) byAction {
	byNS := map[string][]Policy{}
	for _, pol := range sortByCreation(policies) {
		if pol.Spec == nil {
			continue
		}
		byNS[pol.Namespace] = append(byNS[pol.Namespace], pol)
	}
	var out byAction
	namespaces := []string{root, p.Namespace}
	if root == p.Namespace {
		namespaces = namespaces[:1]
	}
	for _, ns := range namespaces {
		for _, pol := range byNS[ns] {
			if !policyattach.Selects(p, pol.Namespace, pol.Spec) {
				continue
			}
			out.all = append(out.all, pol)
			switch pol.Spec.GetAction() {
			case securityv1beta1.AuthorizationPolicy_ALLOW:
				out.allow = append(out.allow, pol)
			case securityv1beta1.AuthorizationPolicy_DENY:
				out.deny = append(out.deny, pol)
			case securityv1beta1.AuthorizationPolicy_AUDIT:
				out.audit = append(out.audit, pol)
			case securityv1beta1.AuthorizationPolicy_CUSTOM:
				out.custom = append(out.custom, pol)
			default:
				out.unknown = append(out.unknown, pol)
			}
		}
	}
	return out
}
