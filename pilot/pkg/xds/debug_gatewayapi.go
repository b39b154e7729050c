package xds

import (
	"cmp"
	"slices"
	"strings"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// GatewayAPIz is the Gateway API status the last conversion computed, in
// /debug/configz: what Kubernetes mode writes to the objects' status, and
// in file mode, where nothing is written, the only place to read it.
type GatewayAPIz struct {
	GatewayClasses []GatewayClassz `json:"gatewayClasses"`
	Gateways       []Gatewayz      `json:"gateways"`
	Routes         []Routez        `json:"routes"`
}

// GatewayClassz is the status of one handled GatewayClass.
type GatewayClassz struct {
	Name   string                `json:"name"`
	Status gw.GatewayClassStatus `json:"status"`
}

// Gatewayz is the status of one handled Gateway: its conditions and, per
// listener, its conditions and attached routes.
type Gatewayz struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Status    gw.GatewayStatus `json:"status"`
}

// Routez is the parents status of one route, for the parentRefs naming a
// handled Gateway.
type Routez struct {
	Kind      string                 `json:"kind"`
	Namespace string                 `json:"namespace"`
	Name      string                 `json:"name"`
	Parents   []gw.RouteParentStatus `json:"parents"`
}

// gatewayAPIz renders st sorted by kind, namespace and name; nil when the
// Gateway API is off.
func (s *DiscoveryServer) gatewayAPIz() *GatewayAPIz {
	if s.gatewayAPIStatus == nil {
		return nil
	}
	st := s.gatewayAPIStatus()
	out := &GatewayAPIz{GatewayClasses: []GatewayClassz{}, Gateways: []Gatewayz{}, Routes: []Routez{}}
	for name, cs := range st.GatewayClasses {
		out.GatewayClasses = append(out.GatewayClasses, GatewayClassz{Name: name, Status: cs})
	}
	slices.SortFunc(out.GatewayClasses, func(a, b GatewayClassz) int { return strings.Compare(a.Name, b.Name) })
	for key, gs := range st.Gateways {
		out.Gateways = append(out.Gateways, Gatewayz{Namespace: key.Namespace, Name: key.Name, Status: gs})
	}
	slices.SortFunc(out.Gateways, func(a, b Gatewayz) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for key, ps := range st.Routes {
		out.Routes = append(out.Routes, Routez{Kind: key.Kind, Namespace: key.Namespace, Name: key.Name, Parents: ps})
	}
	slices.SortFunc(out.Routes, func(a, b Routez) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}
