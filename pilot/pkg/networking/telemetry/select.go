package telemetry

import (
	"cmp"
	"slices"

	telemetryv1 "istio.io/api/telemetry/v1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// gatewayNameLabel is the label istiod reads a deployed Gateway API
// gateway's name from (label.IoK8sNetworkingGatewayGatewayName).
const gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"

// applicable is what istiod's computedTelemetries holds for one proxy:
// the Telemetries in scope, root first, then namespace, then workload, the
// later overriding the earlier.
type applicable struct {
	root, namespace string
	workload        []string
	// logging holds one entry per level (or selecting Telemetry) that has
	// accessLogging, istiod's computedAccessLogging.
	logging [][]*telemetryv1.AccessLogging
	tracing []*telemetryv1.Tracing
}

// sortByCreation orders Telemetries as istiod's sortConfigByCreationTime:
// oldest first, then name, then namespace.
func sortByCreation(in []Telemetry) []Telemetry {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b Telemetry) int {
		if c := a.CreationTime.Compare(b.CreationTime); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Namespace, b.Namespace)
	})
	return out
}

// namespaceWide reports a Telemetry with no selector labels and no
// targetRefs (istiod: len(matchLabels) == 0 && len(targetRefs) == 0).
func namespaceWide(spec *telemetryv1.Telemetry) bool {
	return len(spec.GetSelector().GetMatchLabels()) == 0 && len(targetRefs(spec)) == 0
}

// targetRefs is istiod's GetTargetRefs: targetRefs, or the legacy
// targetRef alone.
func targetRefs(spec *telemetryv1.Telemetry) []*typev1beta1.PolicyTargetReference {
	refs := spec.GetTargetRefs()
	if len(refs) == 0 && spec.GetTargetRef() != nil {
		refs = []*typev1beta1.PolicyTargetReference{spec.GetTargetRef()}
	}
	return refs
}

// applicableTelemetries follows istiod's Telemetries.applicableTelemetries
// (pilot/pkg/model/telemetry.go) for a gateway (no service): the oldest
// namespace-wide Telemetry of the root namespace, then the oldest
// namespace-wide one of the proxy's namespace (when it is not the root),
// then every Telemetry of the proxy's namespace that selects the proxy, in
// creation order.
func applicableTelemetries(sorted []Telemetry, root string, p Proxy) applicable {
	byNS := map[string][]Telemetry{}
	for _, t := range sorted {
		byNS[t.Namespace] = append(byNS[t.Namespace], t)
	}
	nsWide := func(ns string) (Telemetry, bool) {
		for _, t := range byNS[ns] {
			if namespaceWide(t.Spec) {
				return t, true
			}
		}
		return Telemetry{}, false
	}
	var a applicable
	add := func(t Telemetry) {
		if len(t.Spec.GetAccessLogging()) != 0 {
			a.logging = append(a.logging, t.Spec.GetAccessLogging())
		}
		a.tracing = append(a.tracing, t.Spec.GetTracing()...)
	}
	if root != "" {
		if t, ok := nsWide(root); ok {
			a.root = t.Namespace + "/" + t.Name
			add(t)
		}
	}
	if p.Namespace != root {
		if t, ok := nsWide(p.Namespace); ok {
			a.namespace = t.Namespace + "/" + t.Name
			add(t)
		}
	}
	for _, t := range byNS[p.Namespace] {
		if namespaceWide(t.Spec) || !selects(p, t) {
			continue
		}
		a.workload = append(a.workload, t.Namespace+"/"+t.Name)
		add(t)
	}
	return a
}

// selects follows istiod's WorkloadPolicyMatcher.ShouldAttachPolicy
// (pilot/pkg/model/policyattachment.go) for a gateway that is not a
// waypoint, with ENABLE_SELECTOR_BASED_K8S_GATEWAY_POLICY at its default
// (true): a proxy that is not a Gateway API gateway is selected by labels
// only (a Telemetry with targetRefs never applies to it); a Gateway API
// gateway by labels when the Telemetry has no targetRefs, else by a
// targetRef to its Gateway in its own namespace.
func selects(p Proxy, t Telemetry) bool {
	gwName, isGatewayAPI := p.gatewayName()
	refs := targetRefs(t.Spec)
	if !isGatewayAPI || len(refs) == 0 {
		if len(refs) > 0 {
			return false
		}
		return labelsSubset(t.Spec.GetSelector().GetMatchLabels(), p.Labels)
	}
	for _, ref := range refs {
		if p.Namespace != t.Namespace {
			continue
		}
		if ref.GetNamespace() != "" && ref.GetNamespace() != p.Namespace {
			continue
		}
		if canonicalGroup(ref.GetGroup()) == "gateway.networking.k8s.io" && ref.GetKind() == "Gateway" &&
			ref.GetName() == gwName {
			return true
		}
	}
	return false
}

// gatewayName is the Gateway API Gateway the proxy is deployed for.
func (p Proxy) gatewayName() (string, bool) {
	if p.GatewayName != "" {
		return p.GatewayName, true
	}
	name, ok := p.Labels[gatewayNameLabel]
	return name, ok
}

// canonicalGroup is istiod's config.CanonicalGroup: the core group is
// written "" or "core".
func canonicalGroup(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

func labelsSubset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
