package gatewayapi

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// InputOf sorts objects (as the Kubernetes informers deliver them:
// *gw.GatewayClass, *gw.Gateway, ...) into an Input; other types are
// ignored. Services and Namespaces are left for the caller. ConfigMaps
// among objs (file mode's) answer Input.ConfigMaps.
func InputOf(objs []metav1.Object) Input {
	var in Input
	var configMaps []*corev1.ConfigMap
	for _, o := range objs {
		switch o := o.(type) {
		case *gw.GatewayClass:
			in.GatewayClasses = append(in.GatewayClasses, o)
		case *gw.Gateway:
			in.Gateways = append(in.Gateways, o)
		case *gw.HTTPRoute:
			in.HTTPRoutes = append(in.HTTPRoutes, o)
		case *gw.GRPCRoute:
			in.GRPCRoutes = append(in.GRPCRoutes, o)
		case *gw.TLSRoute:
			in.TLSRoutes = append(in.TLSRoutes, o)
		case *gw.TCPRoute:
			in.TCPRoutes = append(in.TCPRoutes, o)
		case *gw.ReferenceGrant:
			in.ReferenceGrants = append(in.ReferenceGrants, o)
		case *gw.ListenerSet:
			in.ListenerSets = append(in.ListenerSets, o)
		case *gw.BackendTLSPolicy:
			in.BackendTLSPolicies = append(in.BackendTLSPolicies, o)
		case *corev1.ConfigMap:
			// File mode: the folder's ConfigMaps, which
			// BackendTLSPolicies name for their CA.
			configMaps = append(configMaps, o)
		}
	}
	if len(configMaps) > 0 {
		in.ConfigMaps = func(namespace, name string) *corev1.ConfigMap {
			for _, cm := range configMaps {
				if cm.Namespace == namespace && cm.Name == name {
					return cm
				}
			}
			return nil
		}
	}
	return in
}
