package debugapi

import gw "sigs.k8s.io/gateway-api/apis/v1"

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
