package kclient

import (
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istiosecurityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiotelemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	istiolisters "istio.io/client-go/pkg/listers/networking/v1"
	istiolistersv1alpha3 "istio.io/client-go/pkg/listers/networking/v1alpha3"
	istiosecuritylisters "istio.io/client-go/pkg/listers/security/v1"
	istiotelemetrylisters "istio.io/client-go/pkg/listers/telemetry/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// Typed is one kind's informer and its lister, as client-go's generated
// informers give them.
type Typed[Lister any] struct {
	inf    cache.SharedIndexInformer
	lister func(cache.Indexer) Lister
}

// Informer is the kind's shared informer.
func (t Typed[Lister]) Informer() cache.SharedIndexInformer { return t.inf }

// Lister reads the informer's cache.
func (t Typed[Lister]) Lister() Lister { return t.lister(t.inf.GetIndexer()) }

func typed[Lister any](inf cache.SharedIndexInformer, lister func(cache.Indexer) Lister) Typed[Lister] {
	return Typed[Lister]{inf: inf, lister: lister}
}

// KubeFactory is a Factory of Kubernetes kinds.
type KubeFactory struct {
	*Factory
	c Kube
}

// NewKubeFactory is a KubeFactory over c for namespace ns ("" for all).
func NewKubeFactory(c Kube, resync time.Duration, ns string, tweak func(*metav1.ListOptions)) *KubeFactory {
	return &KubeFactory{Factory: NewFactory(c, ns, resync, tweak), c: c}
}

func (f *KubeFactory) Services() Typed[corelisters.ServiceLister] {
	return typed(Informer(f.Factory, f.c.CoreV1().Services(f.Namespace), &corev1.Service{}), corelisters.NewServiceLister)
}

func (f *KubeFactory) Pods() Typed[corelisters.PodLister] {
	return typed(Informer(f.Factory, f.c.CoreV1().Pods(f.Namespace), &corev1.Pod{}), corelisters.NewPodLister)
}

func (f *KubeFactory) Secrets() Typed[corelisters.SecretLister] {
	return typed(Informer(f.Factory, f.c.CoreV1().Secrets(f.Namespace), &corev1.Secret{}), corelisters.NewSecretLister)
}

func (f *KubeFactory) ConfigMaps() Typed[corelisters.ConfigMapLister] {
	return typed(Informer(f.Factory, f.c.CoreV1().ConfigMaps(f.Namespace), &corev1.ConfigMap{}), corelisters.NewConfigMapLister)
}

func (f *KubeFactory) ServiceAccounts() Typed[corelisters.ServiceAccountLister] {
	return typed(Informer(f.Factory, f.c.CoreV1().ServiceAccounts(f.Namespace), &corev1.ServiceAccount{}), corelisters.NewServiceAccountLister)
}

// Namespaces are cluster-scoped: the factory's namespace does not apply.
func (f *KubeFactory) Namespaces() Typed[corelisters.NamespaceLister] {
	return typed(Informer(f.Factory, f.c.CoreV1().Namespaces(), &corev1.Namespace{}), corelisters.NewNamespaceLister)
}

func (f *KubeFactory) EndpointSlices() Typed[discoverylisters.EndpointSliceLister] {
	return typed(Informer(f.Factory, f.c.DiscoveryV1().EndpointSlices(f.Namespace), &discoveryv1.EndpointSlice{}), discoverylisters.NewEndpointSliceLister)
}

func (f *KubeFactory) Ingresses() Typed[networkinglisters.IngressLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1().Ingresses(f.Namespace), &networkingv1.Ingress{}), networkinglisters.NewIngressLister)
}

// IngressClasses are cluster-scoped: the factory's namespace does not apply.
func (f *KubeFactory) IngressClasses() Typed[networkinglisters.IngressClassLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1().IngressClasses(), &networkingv1.IngressClass{}), networkinglisters.NewIngressClassLister)
}

func (f *KubeFactory) Deployments() Typed[appslisters.DeploymentLister] {
	return typed(Informer(f.Factory, f.c.AppsV1().Deployments(f.Namespace), &appsv1.Deployment{}), appslisters.NewDeploymentLister)
}

func (f *KubeFactory) Roles() Typed[rbaclisters.RoleLister] {
	return typed(Informer(f.Factory, f.c.RbacV1().Roles(f.Namespace), &rbacv1.Role{}), rbaclisters.NewRoleLister)
}

func (f *KubeFactory) RoleBindings() Typed[rbaclisters.RoleBindingLister] {
	return typed(Informer(f.Factory, f.c.RbacV1().RoleBindings(f.Namespace), &rbacv1.RoleBinding{}), rbaclisters.NewRoleBindingLister)
}

// IstioFactory is a Factory of Istio's networking kinds (EnvoyFilter
// included), Telemetry, RequestAuthentication and AuthorizationPolicy.
type IstioFactory struct {
	*Factory
	c Istio
}

// NewIstioFactory is an IstioFactory over c for namespace ns ("" for all).
func NewIstioFactory(c Istio, resync time.Duration, ns string) *IstioFactory {
	return &IstioFactory{Factory: NewFactory(c, ns, resync, nil), c: c}
}

func (f *IstioFactory) Gateways() Typed[istiolisters.GatewayLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1().Gateways(f.Namespace), &istionetworkingv1.Gateway{}), istiolisters.NewGatewayLister)
}

func (f *IstioFactory) VirtualServices() Typed[istiolisters.VirtualServiceLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1().VirtualServices(f.Namespace), &istionetworkingv1.VirtualService{}), istiolisters.NewVirtualServiceLister)
}

func (f *IstioFactory) DestinationRules() Typed[istiolisters.DestinationRuleLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1().DestinationRules(f.Namespace), &istionetworkingv1.DestinationRule{}), istiolisters.NewDestinationRuleLister)
}

func (f *IstioFactory) ServiceEntries() Typed[istiolisters.ServiceEntryLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1().ServiceEntries(f.Namespace), &istionetworkingv1.ServiceEntry{}), istiolisters.NewServiceEntryLister)
}

func (f *IstioFactory) EnvoyFilters() Typed[istiolistersv1alpha3.EnvoyFilterLister] {
	return typed(Informer(f.Factory, f.c.NetworkingV1alpha3().EnvoyFilters(f.Namespace), &istionetworkingv1alpha3.EnvoyFilter{}), istiolistersv1alpha3.NewEnvoyFilterLister)
}

func (f *IstioFactory) Telemetries() Typed[istiotelemetrylisters.TelemetryLister] {
	return typed(Informer(f.Factory, f.c.TelemetryV1().Telemetries(f.Namespace), &istiotelemetryv1.Telemetry{}), istiotelemetrylisters.NewTelemetryLister)
}

func (f *IstioFactory) RequestAuthentications() Typed[istiosecuritylisters.RequestAuthenticationLister] {
	return typed(Informer(f.Factory, f.c.SecurityV1().RequestAuthentications(f.Namespace), &istiosecurityv1.RequestAuthentication{}), istiosecuritylisters.NewRequestAuthenticationLister)
}

func (f *IstioFactory) AuthorizationPolicies() Typed[istiosecuritylisters.AuthorizationPolicyLister] {
	return typed(Informer(f.Factory, f.c.SecurityV1().AuthorizationPolicies(f.Namespace), &istiosecurityv1.AuthorizationPolicy{}), istiosecuritylisters.NewAuthorizationPolicyLister)
}

// GatewayFactory is a Factory of the Gateway API's kinds.
type GatewayFactory struct {
	*Factory
	c GatewayAPI
}

// NewGatewayFactory is a GatewayFactory over c for namespace ns ("" for all).
func NewGatewayFactory(c GatewayAPI, resync time.Duration, ns string) *GatewayFactory {
	return &GatewayFactory{Factory: NewFactory(c, ns, resync, nil), c: c}
}

// GatewayClasses are cluster-scoped: the factory's namespace does not apply.
func (f *GatewayFactory) GatewayClasses() Typed[gatewaylisters.GatewayClassLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().GatewayClasses(), &gatewayv1.GatewayClass{}), gatewaylisters.NewGatewayClassLister)
}

func (f *GatewayFactory) Gateways() Typed[gatewaylisters.GatewayLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().Gateways(f.Namespace), &gatewayv1.Gateway{}), gatewaylisters.NewGatewayLister)
}

func (f *GatewayFactory) HTTPRoutes() Typed[gatewaylisters.HTTPRouteLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().HTTPRoutes(f.Namespace), &gatewayv1.HTTPRoute{}), gatewaylisters.NewHTTPRouteLister)
}

func (f *GatewayFactory) GRPCRoutes() Typed[gatewaylisters.GRPCRouteLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().GRPCRoutes(f.Namespace), &gatewayv1.GRPCRoute{}), gatewaylisters.NewGRPCRouteLister)
}

func (f *GatewayFactory) TLSRoutes() Typed[gatewaylisters.TLSRouteLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().TLSRoutes(f.Namespace), &gatewayv1.TLSRoute{}), gatewaylisters.NewTLSRouteLister)
}

func (f *GatewayFactory) TCPRoutes() Typed[gatewaylisters.TCPRouteLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().TCPRoutes(f.Namespace), &gatewayv1.TCPRoute{}), gatewaylisters.NewTCPRouteLister)
}

func (f *GatewayFactory) ReferenceGrants() Typed[gatewaylisters.ReferenceGrantLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().ReferenceGrants(f.Namespace), &gatewayv1.ReferenceGrant{}), gatewaylisters.NewReferenceGrantLister)
}

func (f *GatewayFactory) ListenerSets() Typed[gatewaylisters.ListenerSetLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().ListenerSets(f.Namespace), &gatewayv1.ListenerSet{}), gatewaylisters.NewListenerSetLister)
}

func (f *GatewayFactory) BackendTLSPolicies() Typed[gatewaylisters.BackendTLSPolicyLister] {
	return typed(Informer(f.Factory, f.c.GatewayV1().BackendTLSPolicies(f.Namespace), &gatewayv1.BackendTLSPolicy{}), gatewaylisters.NewBackendTLSPolicyLister)
}
