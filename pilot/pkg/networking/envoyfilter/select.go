package envoyfilter

import (
	"cmp"
	"slices"

	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
)

// targetable adapts an EnvoyFilter spec to policyattach.Targetable (the
// spec calls its selector workloadSelector and has no legacy targetRef).
type targetable struct{ f Filter }

func (t targetable) GetTargetRef() *typev1beta1.PolicyTargetReference { return nil }

func (t targetable) GetTargetRefs() []*typev1beta1.PolicyTargetReference {
	return t.f.Spec.GetTargetRefs()
}

func (t targetable) GetSelector() *typev1beta1.WorkloadSelector {
	if ws := t.f.Spec.GetWorkloadSelector(); ws != nil {
		return &typev1beta1.WorkloadSelector{MatchLabels: ws.GetLabels()}
	}
	return nil
}

// Select returns the filters that apply to a gateway proxy, ordered as
// istiod's PushContext.EnvoyFilters(proxy) orders them: those of the root
// namespace and then of the proxy's namespace, each attached by
// workloadSelector or targetRefs (policyattach.Selects, istiod's
// WorkloadPolicyMatcher); sorted by priority, root namespace first, then
// creation time, then "name.namespace".
func Select(filters []Filter, rootNamespace string, proxy policyattach.Proxy) []Filter {
	var out []Filter
	for _, f := range filters {
		if f.Spec == nil {
			continue
		}
		if f.Namespace != rootNamespace && f.Namespace != proxy.Namespace {
			continue
		}
		if policyattach.Selects(proxy, f.Namespace, targetable{f}) {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Filter) int {
		if c := cmp.Compare(a.Priority(), b.Priority()); c != 0 {
			return c
		}
		if a.Namespace != b.Namespace && (a.Namespace == rootNamespace || b.Namespace == rootNamespace) {
			if a.Namespace == rootNamespace {
				return -1
			}
			return 1
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name+"."+a.Namespace, b.Name+"."+b.Namespace)
	})
	return out
}
