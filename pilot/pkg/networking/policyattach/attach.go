package policyattach

import (
	"cmp"
	"slices"
	"time"

	typev1beta1 "istio.io/api/type/v1beta1"
)

// GatewayNameLabel is the label istiod reads a deployed Gateway API
// gateway's name from (label.IoK8sNetworkingGatewayGatewayName).
const GatewayNameLabel = "gateway.networking.k8s.io/gateway-name"

// GatewayAPIGroup is the Gateway API's group.
const GatewayAPIGroup = "gateway.networking.k8s.io"

// Targetable is what istio/api's Telemetry, RequestAuthentication and
// AuthorizationPolicy specs have in common (istiod's TargetablePolicy).
type Targetable interface {
	GetTargetRef() *typev1beta1.PolicyTargetReference
	GetTargetRefs() []*typev1beta1.PolicyTargetReference
	GetSelector() *typev1beta1.WorkloadSelector
}

// Proxy is what attachment reads of a gateway proxy.
type Proxy struct {
	// Namespace is the proxy's config namespace (istiod's
	// Proxy.ConfigNamespace): only policies of this namespace (and
	// namespace-wide ones of the root namespace) apply to it.
	Namespace string
	// Labels are the proxy's workload labels, matched against selectors.
	Labels map[string]string
	// GatewayName is the Gateway API Gateway the proxy is deployed for,
	// which targetRefs name. Empty: istiod's rule, the value of the
	// gateway.networking.k8s.io/gateway-name label when the proxy has it;
	// a proxy with neither is not a Gateway API gateway.
	GatewayName string
}

// GatewayAPIName is the Gateway API Gateway p is deployed for, and
// whether it is one.
func (p Proxy) GatewayAPIName() (string, bool) {
	if p.GatewayName != "" {
		return p.GatewayName, true
	}
	name, ok := p.Labels[GatewayNameLabel]
	return name, ok
}

// TargetRefs is istiod's GetTargetRefs: targetRefs, or the legacy
// targetRef alone.
func TargetRefs(spec Targetable) []*typev1beta1.PolicyTargetReference {
	refs := spec.GetTargetRefs()
	if len(refs) == 0 && spec.GetTargetRef() != nil {
		refs = []*typev1beta1.PolicyTargetReference{spec.GetTargetRef()}
	}
	return refs
}

// NamespaceWide reports a policy with no selector labels and no
// targetRefs, which applies to every proxy of its namespace (istiod:
// len(matchLabels) == 0 && len(targetRefs) == 0).
func NamespaceWide(spec Targetable) bool {
	return len(spec.GetSelector().GetMatchLabels()) == 0 && len(TargetRefs(spec)) == 0
}

// Selects follows istiod's WorkloadPolicyMatcher.ShouldAttachPolicy for a
// gateway that is not a waypoint, with ENABLE_SELECTOR_BASED_K8S_GATEWAY_POLICY
// at its default (true), for a policy of namespace policyNS: a proxy that
// is not a Gateway API gateway is selected by labels only (a policy with
// targetRefs never applies to it); a Gateway API gateway by labels when
// the policy has no targetRefs, else by a targetRef to its Gateway in its
// own namespace. Namespace-wide policies select every proxy by labels
// (an empty selector is a subset of any labels); callers deciding levels
// check NamespaceWide first.
func Selects(p Proxy, policyNS string, spec Targetable) bool {
	gwName, isGatewayAPI := p.GatewayAPIName()
	refs := TargetRefs(spec)
	if !isGatewayAPI || len(refs) == 0 {
		if len(refs) > 0 {
			return false
		}
		return LabelsSubset(spec.GetSelector().GetMatchLabels(), p.Labels)
	}
	for _, ref := range refs {
		if p.Namespace != policyNS {
			continue
		}
		if ref.GetNamespace() != "" && ref.GetNamespace() != p.Namespace {
			continue
		}
		if IsGatewayRef(ref) && ref.GetName() == gwName {
			return true
		}
	}
	return false
}

// IsGatewayRef reports a targetRef to a Gateway API Gateway.
func IsGatewayRef(ref *typev1beta1.PolicyTargetReference) bool {
	return CanonicalGroup(ref.GetGroup()) == GatewayAPIGroup && ref.GetKind() == "Gateway"
}

// CanonicalGroup is istiod's config.CanonicalGroup: the core group is
// written "" or "core".
func CanonicalGroup(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

// LabelsSubset reports whether every label of want is in have.
func LabelsSubset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Object is what SortByCreation orders policies by.
type Object interface {
	CreationKey() (created time.Time, name, namespace string)
}

// SortByCreation returns in ordered as istiod's sortConfigByCreationTime
// orders policies: oldest first, then by name, then by namespace.
func SortByCreation[T Object](in []T) []T {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b T) int {
		ta, na, nsa := a.CreationKey()
		tb, nb, nsb := b.CreationKey()
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
		return cmp.Compare(nsa, nsb)
	})
	return out
}
