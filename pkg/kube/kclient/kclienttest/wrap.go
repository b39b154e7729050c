// Package kclienttest adapts client-go's clientsets (their fakes, in unit
// tests) to kclient's interfaces. Only tests import it: it links every
// generated client that kclient exists to leave out.
package kclienttest

import (
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiotelemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Kube adapts a client-go clientset.
func Kube(cs kubernetes.Interface) kclient.Kube { return kube{cs} }

// Istio adapts Istio's clientset.
func Istio(cs istioclient.Interface) kclient.Istio { return istio{cs} }

// GatewayAPI adapts the Gateway API's clientset.
func GatewayAPI(cs gwclient.Interface) kclient.GatewayAPI { return gatewayAPI{cs} }

type kube struct{ cs kubernetes.Interface }

// IsWatchListSemanticsUnSupported tells kclient's informers to list and
// then watch: fake clientsets cannot stream an initial list (Istio's do
// not even say so), and a real API server serves both.
func (k kube) IsWatchListSemanticsUnSupported() bool       { return true }
func (i istio) IsWatchListSemanticsUnSupported() bool      { return true }
func (g gatewayAPI) IsWatchListSemanticsUnSupported() bool { return true }

func (k kube) CoreV1() kclient.CoreV1                     { return coreV1(k) }
func (k kube) DiscoveryV1() kclient.DiscoveryV1           { return discoveryV1(k) }
func (k kube) NetworkingV1() kclient.NetworkingV1         { return networkingV1(k) }
func (k kube) AppsV1() kclient.AppsV1                     { return appsV1(k) }
func (k kube) CoordinationV1() kclient.CoordinationV1     { return coordinationV1(k) }
func (k kube) AuthenticationV1() kclient.AuthenticationV1 { return authenticationV1(k) }
func (k kube) AuthorizationV1() kclient.AuthorizationV1   { return authorizationV1(k) }
func (k kube) RbacV1() kclient.RbacV1                     { return rbacV1(k) }

func (k kube) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return k.cs.Discovery().ServerResourcesForGroupVersion(gv)
}

type coreV1 struct{ cs kubernetes.Interface }

func (c coreV1) Services(ns string) kclient.StatusResource[*corev1.Service, *corev1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}

func (c coreV1) Pods(ns string) kclient.StatusResource[*corev1.Pod, *corev1.PodList] {
	return c.cs.CoreV1().Pods(ns)
}

func (c coreV1) Secrets(ns string) kclient.Resource[*corev1.Secret, *corev1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}

func (c coreV1) ConfigMaps(ns string) kclient.Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return c.cs.CoreV1().ConfigMaps(ns)
}

func (c coreV1) ServiceAccounts(ns string) kclient.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return c.cs.CoreV1().ServiceAccounts(ns)
}

func (c coreV1) Namespaces() kclient.StatusResource[*corev1.Namespace, *corev1.NamespaceList] {
	return c.cs.CoreV1().Namespaces()
}

func (c coreV1) Events(ns string) kclient.Resource[*corev1.Event, *corev1.EventList] {
	return c.cs.CoreV1().Events(ns)
}

type discoveryV1 struct{ cs kubernetes.Interface }

func (c discoveryV1) EndpointSlices(ns string) kclient.Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
	return c.cs.DiscoveryV1().EndpointSlices(ns)
}

type networkingV1 struct{ cs kubernetes.Interface }

func (c networkingV1) Ingresses(ns string) kclient.StatusResource[*networkingv1.Ingress, *networkingv1.IngressList] {
	return c.cs.NetworkingV1().Ingresses(ns)
}

func (c networkingV1) IngressClasses() kclient.Resource[*networkingv1.IngressClass, *networkingv1.IngressClassList] {
	return c.cs.NetworkingV1().IngressClasses()
}

type appsV1 struct{ cs kubernetes.Interface }

func (c appsV1) Deployments(ns string) kclient.StatusResource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return c.cs.AppsV1().Deployments(ns)
}

type coordinationV1 struct{ cs kubernetes.Interface }

func (c coordinationV1) Leases(ns string) kclient.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return c.cs.CoordinationV1().Leases(ns)
}

type authenticationV1 struct{ cs kubernetes.Interface }

func (c authenticationV1) TokenReviews() kclient.Creator[*authenticationv1.TokenReview] {
	return c.cs.AuthenticationV1().TokenReviews()
}

type authorizationV1 struct{ cs kubernetes.Interface }

func (c authorizationV1) SubjectAccessReviews() kclient.Creator[*authorizationv1.SubjectAccessReview] {
	return c.cs.AuthorizationV1().SubjectAccessReviews()
}

type rbacV1 struct{ cs kubernetes.Interface }

func (c rbacV1) Roles(ns string) kclient.Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return c.cs.RbacV1().Roles(ns)
}

func (c rbacV1) RoleBindings(ns string) kclient.Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return c.cs.RbacV1().RoleBindings(ns)
}

type istio struct{ cs istioclient.Interface }

func (i istio) NetworkingV1() kclient.IstioNetworkingV1 { return istioNetworkingV1(i) }

type istioNetworkingV1 struct{ cs istioclient.Interface }

func (c istioNetworkingV1) Gateways(ns string) kclient.StatusResource[*istionetworkingv1.Gateway, *istionetworkingv1.GatewayList] {
	return c.cs.NetworkingV1().Gateways(ns)
}

func (c istioNetworkingV1) VirtualServices(ns string) kclient.StatusResource[*istionetworkingv1.VirtualService, *istionetworkingv1.VirtualServiceList] {
	return c.cs.NetworkingV1().VirtualServices(ns)
}

func (c istioNetworkingV1) DestinationRules(ns string) kclient.StatusResource[*istionetworkingv1.DestinationRule, *istionetworkingv1.DestinationRuleList] {
	return c.cs.NetworkingV1().DestinationRules(ns)
}

func (c istioNetworkingV1) ServiceEntries(ns string) kclient.StatusResource[*istionetworkingv1.ServiceEntry, *istionetworkingv1.ServiceEntryList] {
	return c.cs.NetworkingV1().ServiceEntries(ns)
}

func (i istio) NetworkingV1alpha3() kclient.IstioNetworkingV1alpha3 {
	return istioNetworkingV1alpha3(i)
}

type istioNetworkingV1alpha3 struct{ cs istioclient.Interface }

func (c istioNetworkingV1alpha3) EnvoyFilters(ns string) kclient.StatusResource[*istionetworkingv1alpha3.EnvoyFilter, *istionetworkingv1alpha3.EnvoyFilterList] {
	return c.cs.NetworkingV1alpha3().EnvoyFilters(ns)
}

func (i istio) TelemetryV1() kclient.IstioTelemetryV1 { return istioTelemetryV1(i) }

type istioTelemetryV1 struct{ cs istioclient.Interface }

func (c istioTelemetryV1) Telemetries(ns string) kclient.StatusResource[*istiotelemetryv1.Telemetry, *istiotelemetryv1.TelemetryList] {
	return c.cs.TelemetryV1().Telemetries(ns)
}

func (i istio) SecurityV1() kclient.IstioSecurityV1 { return istioSecurityV1(i) }

type istioSecurityV1 struct{ cs istioclient.Interface }

func (c istioSecurityV1) RequestAuthentications(ns string) kclient.StatusResource[*istiosecurityv1.RequestAuthentication, *istiosecurityv1.RequestAuthenticationList] {
	return c.cs.SecurityV1().RequestAuthentications(ns)
}

func (c istioSecurityV1) AuthorizationPolicies(ns string) kclient.StatusResource[*istiosecurityv1.AuthorizationPolicy, *istiosecurityv1.AuthorizationPolicyList] {
	return c.cs.SecurityV1().AuthorizationPolicies(ns)
}

type gatewayAPI struct{ cs gwclient.Interface }

func (g gatewayAPI) GatewayV1() kclient.GatewayV1 { return gatewayV1(g) }

type gatewayV1 struct{ cs gwclient.Interface }

func (c gatewayV1) GatewayClasses() kclient.StatusResource[*gatewayv1.GatewayClass, *gatewayv1.GatewayClassList] {
	return c.cs.GatewayV1().GatewayClasses()
}

func (c gatewayV1) Gateways(ns string) kclient.StatusResource[*gatewayv1.Gateway, *gatewayv1.GatewayList] {
	return c.cs.GatewayV1().Gateways(ns)
}

func (c gatewayV1) HTTPRoutes(ns string) kclient.StatusResource[*gatewayv1.HTTPRoute, *gatewayv1.HTTPRouteList] {
	return c.cs.GatewayV1().HTTPRoutes(ns)
}

func (c gatewayV1) GRPCRoutes(ns string) kclient.StatusResource[*gatewayv1.GRPCRoute, *gatewayv1.GRPCRouteList] {
	return c.cs.GatewayV1().GRPCRoutes(ns)
}

func (c gatewayV1) TLSRoutes(ns string) kclient.StatusResource[*gatewayv1.TLSRoute, *gatewayv1.TLSRouteList] {
	return c.cs.GatewayV1().TLSRoutes(ns)
}

func (c gatewayV1) TCPRoutes(ns string) kclient.StatusResource[*gatewayv1.TCPRoute, *gatewayv1.TCPRouteList] {
	return c.cs.GatewayV1().TCPRoutes(ns)
}

func (c gatewayV1) ReferenceGrants(ns string) kclient.Resource[*gatewayv1.ReferenceGrant, *gatewayv1.ReferenceGrantList] {
	return c.cs.GatewayV1().ReferenceGrants(ns)
}

func (c gatewayV1) ListenerSets(ns string) kclient.StatusResource[*gatewayv1.ListenerSet, *gatewayv1.ListenerSetList] {
	return c.cs.GatewayV1().ListenerSets(ns)
}

func (c gatewayV1) BackendTLSPolicies(ns string) kclient.StatusResource[*gatewayv1.BackendTLSPolicy, *gatewayv1.BackendTLSPolicyList] {
	return c.cs.GatewayV1().BackendTLSPolicies(ns)
}
