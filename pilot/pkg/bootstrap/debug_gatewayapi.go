package bootstrap

import (
	"cmp"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
)

// gatewayAPISection shows, in /debug/configz, the Gateway API status the
// source's last conversion computed: what Kubernetes mode writes to the
// objects' status and, in file mode, where nothing is written, the only
// place to read it. The discovery server knows nothing of the Gateway
// API; the section is added to its debug endpoints here.
func gatewayAPISection(status func() gatewayapi.Status) debug.Section {
	return debug.Section{Name: debugapi.GatewayAPISection, Value: func() any { return gatewayAPIz(status()) }}
}

// gatewayAPIz renders st sorted by kind, namespace and name.
func gatewayAPIz(st gatewayapi.Status) *debugapi.GatewayAPIz {
	out := &debugapi.GatewayAPIz{GatewayClasses: []debugapi.GatewayClassz{}, Gateways: []debugapi.Gatewayz{}, Routes: []debugapi.Routez{}}
	for name, cs := range st.GatewayClasses {
		out.GatewayClasses = append(out.GatewayClasses, debugapi.GatewayClassz{Name: name, Status: cs})
	}
	slices.SortFunc(out.GatewayClasses, func(a, b debugapi.GatewayClassz) int { return strings.Compare(a.Name, b.Name) })
	for key, gs := range st.Gateways {
		out.Gateways = append(out.Gateways, debugapi.Gatewayz{Namespace: key.Namespace, Name: key.Name, Status: gs})
	}
	slices.SortFunc(out.Gateways, func(a, b debugapi.Gatewayz) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for key, ps := range st.Routes {
		out.Routes = append(out.Routes, debugapi.Routez{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Parents: ps})
	}
	slices.SortFunc(out.Routes, func(a, b debugapi.Routez) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for key, ls := range st.ListenerSets {
		out.ListenerSets = append(out.ListenerSets, debugapi.ListenerSetz{Namespace: key.Namespace, Name: key.Name, Status: ls})
	}
	slices.SortFunc(out.ListenerSets, func(a, b debugapi.ListenerSetz) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for key, ps := range st.BackendTLSPolicies {
		out.BackendTLSPolicies = append(out.BackendTLSPolicies, debugapi.BackendTLSPolicyz{Namespace: key.Namespace, Name: key.Name, Status: ps})
	}
	slices.SortFunc(out.BackendTLSPolicies, func(a, b debugapi.BackendTLSPolicyz) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}
