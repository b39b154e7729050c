package gatewayapi_test

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// goldenNow is the lastTransitionTime of every condition in the goldens.
var goldenNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// renderStatus lists the computed status of each object, sorted, as
// the API server would show it.
func renderStatus(st gatewayapi.Status) []any {
	out := []any{}
	for _, name := range slices.Sorted(maps.Keys(st.GatewayClasses)) {
		// supportedFeatures, the same on every class, are left out: one
		// test checks them (TestGatewayClassSupportedFeatures), and a
		// feature landing changes no golden.
		cs := st.GatewayClasses[name]
		cs.SupportedFeatures = nil
		out = append(out, map[string]any{"kind": "GatewayClass", "name": name, "status": cs})
	}
	gws := slices.SortedFunc(maps.Keys(st.Gateways), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, k := range gws {
		out = append(out, map[string]any{"kind": "Gateway", "name": k.String(), "status": st.Gateways[k]})
	}
	routes := slices.SortedFunc(maps.Keys(st.Routes), func(a, b gatewayapi.RouteKey) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, k := range routes {
		out = append(out, map[string]any{"kind": k.Kind, "name": k.Namespace + "/" + k.Name, "status": map[string]any{"parents": st.Routes[k]}})
	}
	policies := slices.SortedFunc(maps.Keys(st.BackendTLSPolicies), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, k := range policies {
		out = append(out, map[string]any{"kind": "BackendTLSPolicy", "name": k.String(), "status": st.BackendTLSPolicies[k]})
	}
	sets := slices.SortedFunc(maps.Keys(st.ListenerSets), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, k := range sets {
		out = append(out, map[string]any{"kind": "ListenerSet", "name": k.String(), "status": st.ListenerSets[k]})
	}
	return out
}
