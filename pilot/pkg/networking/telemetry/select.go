package telemetry

import (
	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
)

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
	// applied are the Telemetries above, in the same order, for problems
	// to name the object and field they come from.
	applied []Telemetry
}

// sortByCreation is istiod's sortConfigByCreationTime
// (policyattach.SortByCreation).
func sortByCreation(in []Telemetry) []Telemetry { return policyattach.SortByCreation(in) }

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
		a.applied = append(a.applied, t)
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

// selects is policyattach.Selects for a Telemetry.
func selects(p Proxy, t Telemetry) bool {
	return policyattach.Selects(p.attach(), t.Namespace, t.Spec)
}

// namespaceWide is policyattach.NamespaceWide for a Telemetry spec.
func namespaceWide(spec *telemetryv1.Telemetry) bool { return policyattach.NamespaceWide(spec) }

// attach is p as policy attachment reads it.
func (p Proxy) attach() policyattach.Proxy {
	return policyattach.Proxy{Namespace: p.Namespace, Labels: p.Labels, GatewayName: p.GatewayName}
}
