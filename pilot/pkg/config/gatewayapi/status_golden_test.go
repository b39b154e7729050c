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
		out = append(out, map[string]any{"kind": "GatewayClass", "name": name, "status": st.GatewayClasses[name]})
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
	return out
}
