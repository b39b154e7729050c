package kclient

import (
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiotelemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Kube is the Kubernetes API Wayfinder uses, in client-go's shape
// (kubernetes.Interface, narrowed).
type Kube interface {
	CoreV1() CoreV1
	DiscoveryV1() DiscoveryV1
	NetworkingV1() NetworkingV1
	AppsV1() AppsV1
	CoordinationV1() CoordinationV1
	AuthenticationV1() AuthenticationV1
	AuthorizationV1() AuthorizationV1
	RbacV1() RbacV1
	// ServerResourcesForGroupVersion lists the resources the API server
	// serves for a group version ("group/version"), as client-go's
	// discovery client does.
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// CoreV1 is the core/v1 group.
type CoreV1 interface {
	Services(namespace string) StatusResource[*corev1.Service, *corev1.ServiceList]
	Pods(namespace string) StatusResource[*corev1.Pod, *corev1.PodList]
	Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList]
	ConfigMaps(namespace string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	ServiceAccounts(namespace string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	Namespaces() StatusResource[*corev1.Namespace, *corev1.NamespaceList]
	Events(namespace string) Resource[*corev1.Event, *corev1.EventList]
}

// DiscoveryV1 is the discovery.k8s.io/v1 group.
type DiscoveryV1 interface {
	EndpointSlices(namespace string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]
}

// NetworkingV1 is the networking.k8s.io/v1 group.
type NetworkingV1 interface {
	Ingresses(namespace string) StatusResource[*networkingv1.Ingress, *networkingv1.IngressList]
	IngressClasses() Resource[*networkingv1.IngressClass, *networkingv1.IngressClassList]
}

// AppsV1 is the apps/v1 group.
type AppsV1 interface {
	Deployments(namespace string) StatusResource[*appsv1.Deployment, *appsv1.DeploymentList]
}

// CoordinationV1 is the coordination.k8s.io/v1 group.
type CoordinationV1 interface {
	Leases(namespace string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

// AuthenticationV1 is the authentication.k8s.io/v1 group.
type AuthenticationV1 interface {
	TokenReviews() Creator[*authenticationv1.TokenReview]
}

// AuthorizationV1 is the authorization.k8s.io/v1 group.
type AuthorizationV1 interface {
	SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview]
}

// RbacV1 is the rbac.authorization.k8s.io/v1 group: the Roles and
// RoleBindings the gateway deployer makes for each Gateway's proxies.
type RbacV1 interface {
	Roles(namespace string) Resource[*rbacv1.Role, *rbacv1.RoleList]
	RoleBindings(namespace string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]
}

// Istio is Istio's networking.istio.io/v1 (and v1alpha3, for EnvoyFilter),
// telemetry.istio.io/v1 and security.istio.io/v1 APIs, in the shape of
// Istio's clientset.
type Istio interface {
	NetworkingV1() IstioNetworkingV1
	NetworkingV1alpha3() IstioNetworkingV1alpha3
	TelemetryV1() IstioTelemetryV1
	SecurityV1() IstioSecurityV1
}

// IstioSecurityV1 is the security.istio.io/v1 group (v1beta1 objects are
// served at v1 by the same CRD).
type IstioSecurityV1 interface {
	RequestAuthentications(namespace string) StatusResource[*istiosecurityv1.RequestAuthentication, *istiosecurityv1.RequestAuthenticationList]
	AuthorizationPolicies(namespace string) StatusResource[*istiosecurityv1.AuthorizationPolicy, *istiosecurityv1.AuthorizationPolicyList]
}

// IstioTelemetryV1 is the telemetry.istio.io/v1 group.
type IstioTelemetryV1 interface {
	Telemetries(namespace string) StatusResource[*istiotelemetryv1.Telemetry, *istiotelemetryv1.TelemetryList]
}

// IstioNetworkingV1alpha3 is the networking.istio.io/v1alpha3 group, for
// the one kind its CRD serves at no other version: EnvoyFilter.
type IstioNetworkingV1alpha3 interface {
	EnvoyFilters(namespace string) StatusResource[*istionetworkingv1alpha3.EnvoyFilter, *istionetworkingv1alpha3.EnvoyFilterList]
}

// IstioNetworkingV1 is the networking.istio.io/v1 group.
type IstioNetworkingV1 interface {
	Gateways(namespace string) StatusResource[*istionetworkingv1.Gateway, *istionetworkingv1.GatewayList]
	VirtualServices(namespace string) StatusResource[*istionetworkingv1.VirtualService, *istionetworkingv1.VirtualServiceList]
	DestinationRules(namespace string) StatusResource[*istionetworkingv1.DestinationRule, *istionetworkingv1.DestinationRuleList]
	ServiceEntries(namespace string) StatusResource[*istionetworkingv1.ServiceEntry, *istionetworkingv1.ServiceEntryList]
}

// GatewayAPI is the Gateway API's gateway.networking.k8s.io/v1, in the
// shape of its clientset.
type GatewayAPI interface {
	GatewayV1() GatewayV1
}

// GatewayV1 is the gateway.networking.k8s.io/v1 group.
type GatewayV1 interface {
	GatewayClasses() StatusResource[*gatewayv1.GatewayClass, *gatewayv1.GatewayClassList]
	Gateways(namespace string) StatusResource[*gatewayv1.Gateway, *gatewayv1.GatewayList]
	HTTPRoutes(namespace string) StatusResource[*gatewayv1.HTTPRoute, *gatewayv1.HTTPRouteList]
	GRPCRoutes(namespace string) StatusResource[*gatewayv1.GRPCRoute, *gatewayv1.GRPCRouteList]
	TLSRoutes(namespace string) StatusResource[*gatewayv1.TLSRoute, *gatewayv1.TLSRouteList]
	TCPRoutes(namespace string) StatusResource[*gatewayv1.TCPRoute, *gatewayv1.TCPRouteList]
	ReferenceGrants(namespace string) Resource[*gatewayv1.ReferenceGrant, *gatewayv1.ReferenceGrantList]
	BackendTLSPolicies(namespace string) StatusResource[*gatewayv1.BackendTLSPolicy, *gatewayv1.BackendTLSPolicyList]
	ListenerSets(namespace string) StatusResource[*gatewayv1.ListenerSet, *gatewayv1.ListenerSetList]
}
