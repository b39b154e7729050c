package schema

import (
	"fmt"
	"strings"
)

// GatewayAPIGroup is the Kubernetes Gateway API's group.
const GatewayAPIGroup = "gateway.networking.k8s.io"

// GatewayAPIKind describes one Kubernetes Gateway API kind Wayfinder reads.
// These are not config Kinds: they have no proto spec and the push
// context never reads them. The Gateway API source converts them into
// Gateways and VirtualServices (pilot/pkg/config/gatewayapi); this table
// is the one place their names are spelled, for the file parser and the
// Kubernetes watches.
type GatewayAPIKind struct {
	// Name is the Kubernetes kind, e.g. "HTTPRoute".
	Name string
	// Plural is the resource name, e.g. "httproutes".
	Plural string
	// Versions lists every accepted API version; the first is preferred.
	Versions []string
	// ClusterScoped kinds have no namespace (GatewayClass).
	ClusterScoped bool
}

// CRDName is the name of the kind's CustomResourceDefinition,
// "PLURAL.gateway.networking.k8s.io".
func (k GatewayAPIKind) CRDName() string { return k.Plural + "." + GatewayAPIGroup }

// The Gateway API kinds. The standard channel of sigs.k8s.io/gateway-api
// v1.6.3 serves all of them at v1 (TLSRoute, TCPRoute, ListenerSet and
// BackendTLSPolicy included).
var (
	GatewayClassKind   = GatewayAPIKind{Name: "GatewayClass", Plural: "gatewayclasses", Versions: []string{"v1"}, ClusterScoped: true}
	GatewayKind        = GatewayAPIKind{Name: "Gateway", Plural: "gateways", Versions: []string{"v1"}}
	HTTPRouteKind      = GatewayAPIKind{Name: "HTTPRoute", Plural: "httproutes", Versions: []string{"v1"}}
	GRPCRouteKind      = GatewayAPIKind{Name: "GRPCRoute", Plural: "grpcroutes", Versions: []string{"v1"}}
	TLSRouteKind       = GatewayAPIKind{Name: "TLSRoute", Plural: "tlsroutes", Versions: []string{"v1"}}
	TCPRouteKind       = GatewayAPIKind{Name: "TCPRoute", Plural: "tcproutes", Versions: []string{"v1"}}
	ReferenceGrantKind = GatewayAPIKind{Name: "ReferenceGrant", Plural: "referencegrants", Versions: []string{"v1"}}
	ListenerSetKind    = GatewayAPIKind{Name: "ListenerSet", Plural: "listenersets", Versions: []string{"v1"}}
	// BackendTLSPolicyKind is a policy, not a route or gateway: it targets
	// Services (targetRefs).
	BackendTLSPolicyKind = GatewayAPIKind{Name: "BackendTLSPolicy", Plural: "backendtlspolicies", Versions: []string{"v1"}}
)

var gatewayAPIKinds = []GatewayAPIKind{
	GatewayClassKind, GatewayKind, HTTPRouteKind, GRPCRouteKind, TLSRouteKind, TCPRouteKind, ReferenceGrantKind,
	ListenerSetKind, BackendTLSPolicyKind,
}

// GatewayAPIKinds returns every Gateway API kind Wayfinder reads.
func GatewayAPIKinds() []GatewayAPIKind { return gatewayAPIKinds }

// GatewayAPIByPlural finds a Gateway API kind by resource name.
func GatewayAPIByPlural(plural string) (GatewayAPIKind, bool) {
	for _, k := range gatewayAPIKinds {
		if k.Plural == plural {
			return k, true
		}
	}
	return GatewayAPIKind{}, false
}

// GatewayAPIByAPIVersion finds the Gateway API kind of a manifest's
// apiVersion and kind. ok is false when apiVersion is not of the Gateway
// API's group (the caller tries the Istio kinds); err says what did not
// match within the group.
func GatewayAPIByAPIVersion(apiVersion, kindName string) (k GatewayAPIKind, ok bool, err error) {
	group, version, cut := strings.Cut(apiVersion, "/")
	if !cut || group != GatewayAPIGroup {
		return GatewayAPIKind{}, false, nil
	}
	for _, k := range gatewayAPIKinds {
		if k.Name != kindName {
			continue
		}
		for _, v := range k.Versions {
			if v == version {
				return k, true, nil
			}
		}
		return GatewayAPIKind{}, true, fmt.Errorf("apiVersion %q: version %q of %s is not supported (want one of %s)",
			apiVersion, version, kindName, strings.Join(k.Versions, ", "))
	}
	return GatewayAPIKind{}, true, fmt.Errorf("kind %q in %q is not a Gateway API kind Wayfinder reads", kindName, apiVersion)
}
