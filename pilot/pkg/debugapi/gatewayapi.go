package debugapi

import gw "sigs.k8s.io/gateway-api/apis/v1"

// GatewayAPIz is the Gateway API status the last conversion computed, in
// /debug/configz: what Kubernetes mode writes to the objects' status, and
// in file mode, where nothing is written, the only place to read it.
type GatewayAPIz struct {
	GatewayClasses []GatewayClassz `json:"gatewayClasses"`
	Gateways       []Gatewayz      `json:"gateways"`
	Routes         []Routez        `json:"routes"`
	// ListenerSets attached, or refused, by a handled Gateway.
	ListenerSets []ListenerSetz `json:"listenerSets,omitempty"`
	// BackendTLSPolicies with Wayfinder's ancestors (none where no
	// Gateway of Wayfinder's reaches their Services).
	BackendTLSPolicies []BackendTLSPolicyz `json:"backendTLSPolicies,omitempty"`
}

// BackendTLSPolicyz is the status of one BackendTLSPolicy.
type BackendTLSPolicyz struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Status    gw.PolicyStatus `json:"status"`
}

// ListenerSetz is the status of one ListenerSet whose parent is a handled
// Gateway.
type ListenerSetz struct {
	Namespace string               `json:"namespace"`
	Name      string               `json:"name"`
	Status    gw.ListenerSetStatus `json:"status"`
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
