package kclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Clients are the three APIs over one HTTP client. Each API has a rate
// limiter of its own, as each of client-go's clientsets (Kubernetes',
// Istio's, the Gateway API's) had one shared by its groups.
type Clients struct {
	Kube       Kube
	Istio      Istio
	GatewayAPI GatewayAPI
}

// New builds Clients from cfg. Kubernetes' own kinds are read as
// protobuf (as client-go's clientset prefers), custom resources as JSON.
func New(cfg *rest.Config) (*Clients, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 && c.Burst <= 0 {
		return nil, fmt.Errorf("kubernetes client: burst must be positive when QPS is set")
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	b := builder{cfg: &c, hc: hc}
	kubeRL, istioRL, gwRL := b.limiter(), b.limiter(), b.limiter()
	k := &kube{
		core:   b.group("/api", corev1.SchemeGroupVersion, kubeRL),
		disc:   b.group("/apis", discoveryv1.SchemeGroupVersion, kubeRL),
		net:    b.group("/apis", networkingv1.SchemeGroupVersion, kubeRL),
		apps:   b.group("/apis", appsv1.SchemeGroupVersion, kubeRL),
		coord:  b.group("/apis", coordinationv1.SchemeGroupVersion, kubeRL),
		authn:  b.group("/apis", authenticationv1.SchemeGroupVersion, kubeRL),
		authz:  b.group("/apis", authorizationv1.SchemeGroupVersion, kubeRL),
		rbac:   b.group("/apis", rbacv1.SchemeGroupVersion, kubeRL),
		legacy: b.group("/apis", schema.GroupVersion{}, kubeRL),
		istio:  b.group("/apis", istionetworkingv1.SchemeGroupVersion, istioRL),
		alpha3: b.group("/apis", istionetworkingv1alpha3.SchemeGroupVersion, istioRL),
		tel:    b.group("/apis", istiotelemetryv1.SchemeGroupVersion, istioRL),
		sec:    b.group("/apis", istiosecurityv1.SchemeGroupVersion, istioRL),
		gw:     b.group("/apis", gatewayv1.SchemeGroupVersion, gwRL),
	}
	if b.err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", b.err)
	}
	return &Clients{Kube: k, Istio: istio{k}, GatewayAPI: gatewayAPI{k}}, nil
}

type builder struct {
	cfg *rest.Config
	hc  *http.Client
	err error
}

// limiter is a token bucket for the config's QPS and burst, or the
// config's own limiter when it has one (nil: client-go's default).
func (b *builder) limiter() flowcontrol.RateLimiter {
	if b.cfg.RateLimiter != nil || b.cfg.QPS <= 0 {
		return b.cfg.RateLimiter
	}
	return flowcontrol.NewTokenBucketRateLimiter(b.cfg.QPS, b.cfg.Burst)
}

// group is the REST client of one group version, limited by rl.
func (b *builder) group(apiPath string, gv schema.GroupVersion, rl flowcontrol.RateLimiter) rest.Interface {
	c := *b.cfg
	c.APIPath = apiPath
	c.RateLimiter = rl
	if gv.Version != "" {
		c.GroupVersion = &gv
	}
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
	var rc rest.Interface
	var err error
	if gv.Version == "" {
		rc, err = rest.UnversionedRESTClientForConfigAndClient(&c, b.hc)
	} else {
		rc, err = rest.RESTClientForConfigAndClient(&c, b.hc)
	}
	if err != nil && b.err == nil {
		b.err = err
	}
	return rc
}

type kube struct {
	core, disc, net, apps, coord, authn, authz, rbac, istio, alpha3, tel, sec, gw rest.Interface
	// legacy has no group version: discovery's absolute paths.
	legacy rest.Interface
}

type object interface {
	runtime.Object
	metav1.Object
}

// client is gentype's generic client for one kind; pb reads it as protobuf.
func client[T object, L runtime.Object](rc rest.Interface, resource, ns string, pb bool, newT func() T, newL func() L) *gentype.ClientWithList[T, L] {
	var opts []gentype.Option[T]
	if pb {
		opts = append(opts, gentype.PrefersProtobuf[T]())
	}
	return gentype.NewClientWithList(resource, rc, ParameterCodec, ns, newT, newL, opts...)
}

func (k *kube) CoreV1() CoreV1                     { return coreV1{k} }
func (k *kube) DiscoveryV1() DiscoveryV1           { return discoveryV1{k} }
func (k *kube) NetworkingV1() NetworkingV1         { return networkingV1{k} }
func (k *kube) AppsV1() AppsV1                     { return appsV1{k} }
func (k *kube) CoordinationV1() CoordinationV1     { return coordinationV1{k} }
func (k *kube) AuthenticationV1() AuthenticationV1 { return authenticationV1{k} }
func (k *kube) AuthorizationV1() AuthorizationV1   { return authorizationV1{k} }
func (k *kube) RbacV1() RbacV1                     { return rbacV1{k} }

func (k *kube) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	path := "/apis/" + groupVersion
	if groupVersion == "v1" {
		path = "/api/v1"
	}
	raw, err := k.legacy.Get().AbsPath(path).SetHeader("Accept", "application/json").Do(context.TODO()).Raw()
	if err != nil {
		return nil, err
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(raw, list); err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", groupVersion, err)
	}
	if list.GroupVersion == "" {
		list.GroupVersion = groupVersion
	}
	return list, nil
}

type coreV1 struct{ k *kube }

func (c coreV1) Services(ns string) StatusResource[*corev1.Service, *corev1.ServiceList] {
	return client(c.k.core, "services", ns, true, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

func (c coreV1) Pods(ns string) StatusResource[*corev1.Pod, *corev1.PodList] {
	return client(c.k.core, "pods", ns, true, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

func (c coreV1) Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
	return client(c.k.core, "secrets", ns, true, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

func (c coreV1) ConfigMaps(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return client(c.k.core, "configmaps", ns, true, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

func (c coreV1) ServiceAccounts(ns string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return client(c.k.core, "serviceaccounts", ns, true, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} })
}

func (c coreV1) Namespaces() StatusResource[*corev1.Namespace, *corev1.NamespaceList] {
	return client(c.k.core, "namespaces", "", true, func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (c coreV1) Events(ns string) Resource[*corev1.Event, *corev1.EventList] {
	return client(c.k.core, "events", ns, true, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

type discoveryV1 struct{ k *kube }

func (c discoveryV1) EndpointSlices(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
	return client(c.k.disc, "endpointslices", ns, true, func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} }, func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} })
}

type networkingV1 struct{ k *kube }

func (c networkingV1) Ingresses(ns string) StatusResource[*networkingv1.Ingress, *networkingv1.IngressList] {
	return client(c.k.net, "ingresses", ns, true, func() *networkingv1.Ingress { return &networkingv1.Ingress{} }, func() *networkingv1.IngressList { return &networkingv1.IngressList{} })
}

func (c networkingV1) IngressClasses() Resource[*networkingv1.IngressClass, *networkingv1.IngressClassList] {
	return client(c.k.net, "ingressclasses", "", true, func() *networkingv1.IngressClass { return &networkingv1.IngressClass{} }, func() *networkingv1.IngressClassList { return &networkingv1.IngressClassList{} })
}

type appsV1 struct{ k *kube }

func (c appsV1) Deployments(ns string) StatusResource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return client(c.k.apps, "deployments", ns, true, func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })
}

type coordinationV1 struct{ k *kube }

func (c coordinationV1) Leases(ns string) Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return client(c.k.coord, "leases", ns, true, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

type authenticationV1 struct{ k *kube }

func (c authenticationV1) TokenReviews() Creator[*authenticationv1.TokenReview] {
	return gentype.NewClient("tokenreviews", c.k.authn, ParameterCodec, "", func() *authenticationv1.TokenReview { return &authenticationv1.TokenReview{} },
		gentype.PrefersProtobuf[*authenticationv1.TokenReview]())
}

type authorizationV1 struct{ k *kube }

func (c authorizationV1) SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview] {
	return gentype.NewClient("subjectaccessreviews", c.k.authz, ParameterCodec, "", func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} },
		gentype.PrefersProtobuf[*authorizationv1.SubjectAccessReview]())
}

type rbacV1 struct{ k *kube }

func (c rbacV1) Roles(ns string) Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return client(c.k.rbac, "roles", ns, true, func() *rbacv1.Role { return &rbacv1.Role{} }, func() *rbacv1.RoleList { return &rbacv1.RoleList{} })
}

func (c rbacV1) RoleBindings(ns string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return client(c.k.rbac, "rolebindings", ns, true, func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} }, func() *rbacv1.RoleBindingList { return &rbacv1.RoleBindingList{} })
}

type istio struct{ k *kube }

func (i istio) NetworkingV1() IstioNetworkingV1 { return istioNetworkingV1(i) }

type istioNetworkingV1 struct{ k *kube }

func (c istioNetworkingV1) Gateways(ns string) StatusResource[*istionetworkingv1.Gateway, *istionetworkingv1.GatewayList] {
	return client(c.k.istio, "gateways", ns, false, func() *istionetworkingv1.Gateway { return &istionetworkingv1.Gateway{} }, func() *istionetworkingv1.GatewayList { return &istionetworkingv1.GatewayList{} })
}

func (c istioNetworkingV1) VirtualServices(ns string) StatusResource[*istionetworkingv1.VirtualService, *istionetworkingv1.VirtualServiceList] {
	return client(c.k.istio, "virtualservices", ns, false, func() *istionetworkingv1.VirtualService { return &istionetworkingv1.VirtualService{} }, func() *istionetworkingv1.VirtualServiceList { return &istionetworkingv1.VirtualServiceList{} })
}

func (c istioNetworkingV1) DestinationRules(ns string) StatusResource[*istionetworkingv1.DestinationRule, *istionetworkingv1.DestinationRuleList] {
	return client(c.k.istio, "destinationrules", ns, false, func() *istionetworkingv1.DestinationRule { return &istionetworkingv1.DestinationRule{} }, func() *istionetworkingv1.DestinationRuleList { return &istionetworkingv1.DestinationRuleList{} })
}

func (c istioNetworkingV1) ServiceEntries(ns string) StatusResource[*istionetworkingv1.ServiceEntry, *istionetworkingv1.ServiceEntryList] {
	return client(c.k.istio, "serviceentries", ns, false, func() *istionetworkingv1.ServiceEntry { return &istionetworkingv1.ServiceEntry{} }, func() *istionetworkingv1.ServiceEntryList { return &istionetworkingv1.ServiceEntryList{} })
}

func (i istio) NetworkingV1alpha3() IstioNetworkingV1alpha3 { return istioNetworkingV1alpha3(i) }

type istioNetworkingV1alpha3 struct{ k *kube }

func (c istioNetworkingV1alpha3) EnvoyFilters(ns string) StatusResource[*istionetworkingv1alpha3.EnvoyFilter, *istionetworkingv1alpha3.EnvoyFilterList] {
	return client(c.k.alpha3, "envoyfilters", ns, false, func() *istionetworkingv1alpha3.EnvoyFilter { return &istionetworkingv1alpha3.EnvoyFilter{} }, func() *istionetworkingv1alpha3.EnvoyFilterList { return &istionetworkingv1alpha3.EnvoyFilterList{} })
}

func (i istio) TelemetryV1() IstioTelemetryV1 { return istioTelemetryV1(i) }

type istioTelemetryV1 struct{ k *kube }

func (c istioTelemetryV1) Telemetries(ns string) StatusResource[*istiotelemetryv1.Telemetry, *istiotelemetryv1.TelemetryList] {
	return client(c.k.tel, "telemetries", ns, false, func() *istiotelemetryv1.Telemetry { return &istiotelemetryv1.Telemetry{} }, func() *istiotelemetryv1.TelemetryList { return &istiotelemetryv1.TelemetryList{} })
}

func (i istio) SecurityV1() IstioSecurityV1 { return istioSecurityV1(i) }

type istioSecurityV1 struct{ k *kube }

func (c istioSecurityV1) RequestAuthentications(ns string) StatusResource[*istiosecurityv1.RequestAuthentication, *istiosecurityv1.RequestAuthenticationList] {
	return client(c.k.sec, "requestauthentications", ns, false, func() *istiosecurityv1.RequestAuthentication { return &istiosecurityv1.RequestAuthentication{} }, func() *istiosecurityv1.RequestAuthenticationList { return &istiosecurityv1.RequestAuthenticationList{} })
}

func (c istioSecurityV1) AuthorizationPolicies(ns string) StatusResource[*istiosecurityv1.AuthorizationPolicy, *istiosecurityv1.AuthorizationPolicyList] {
	return client(c.k.sec, "authorizationpolicies", ns, false, func() *istiosecurityv1.AuthorizationPolicy { return &istiosecurityv1.AuthorizationPolicy{} }, func() *istiosecurityv1.AuthorizationPolicyList { return &istiosecurityv1.AuthorizationPolicyList{} })
}

type gatewayAPI struct{ k *kube }

func (g gatewayAPI) GatewayV1() GatewayV1 { return gatewayV1(g) }

type gatewayV1 struct{ k *kube }

func (c gatewayV1) GatewayClasses() StatusResource[*gatewayv1.GatewayClass, *gatewayv1.GatewayClassList] {
	return client(c.k.gw, "gatewayclasses", "", false, func() *gatewayv1.GatewayClass { return &gatewayv1.GatewayClass{} }, func() *gatewayv1.GatewayClassList { return &gatewayv1.GatewayClassList{} })
}

func (c gatewayV1) Gateways(ns string) StatusResource[*gatewayv1.Gateway, *gatewayv1.GatewayList] {
	return client(c.k.gw, "gateways", ns, false, func() *gatewayv1.Gateway { return &gatewayv1.Gateway{} }, func() *gatewayv1.GatewayList { return &gatewayv1.GatewayList{} })
}

func (c gatewayV1) HTTPRoutes(ns string) StatusResource[*gatewayv1.HTTPRoute, *gatewayv1.HTTPRouteList] {
	return client(c.k.gw, "httproutes", ns, false, func() *gatewayv1.HTTPRoute { return &gatewayv1.HTTPRoute{} }, func() *gatewayv1.HTTPRouteList { return &gatewayv1.HTTPRouteList{} })
}

func (c gatewayV1) GRPCRoutes(ns string) StatusResource[*gatewayv1.GRPCRoute, *gatewayv1.GRPCRouteList] {
	return client(c.k.gw, "grpcroutes", ns, false, func() *gatewayv1.GRPCRoute { return &gatewayv1.GRPCRoute{} }, func() *gatewayv1.GRPCRouteList { return &gatewayv1.GRPCRouteList{} })
}

func (c gatewayV1) TLSRoutes(ns string) StatusResource[*gatewayv1.TLSRoute, *gatewayv1.TLSRouteList] {
	return client(c.k.gw, "tlsroutes", ns, false, func() *gatewayv1.TLSRoute { return &gatewayv1.TLSRoute{} }, func() *gatewayv1.TLSRouteList { return &gatewayv1.TLSRouteList{} })
}

func (c gatewayV1) TCPRoutes(ns string) StatusResource[*gatewayv1.TCPRoute, *gatewayv1.TCPRouteList] {
	return client(c.k.gw, "tcproutes", ns, false, func() *gatewayv1.TCPRoute { return &gatewayv1.TCPRoute{} }, func() *gatewayv1.TCPRouteList { return &gatewayv1.TCPRouteList{} })
}

func (c gatewayV1) ReferenceGrants(ns string) Resource[*gatewayv1.ReferenceGrant, *gatewayv1.ReferenceGrantList] {
	return client(c.k.gw, "referencegrants", ns, false, func() *gatewayv1.ReferenceGrant { return &gatewayv1.ReferenceGrant{} }, func() *gatewayv1.ReferenceGrantList { return &gatewayv1.ReferenceGrantList{} })
}

func (c gatewayV1) ListenerSets(ns string) StatusResource[*gatewayv1.ListenerSet, *gatewayv1.ListenerSetList] {
	return client(c.k.gw, "listenersets", ns, false, func() *gatewayv1.ListenerSet { return &gatewayv1.ListenerSet{} }, func() *gatewayv1.ListenerSetList { return &gatewayv1.ListenerSetList{} })
}

func (c gatewayV1) BackendTLSPolicies(ns string) StatusResource[*gatewayv1.BackendTLSPolicy, *gatewayv1.BackendTLSPolicyList] {
	return client(c.k.gw, "backendtlspolicies", ns, false, func() *gatewayv1.BackendTLSPolicy { return &gatewayv1.BackendTLSPolicy{} }, func() *gatewayv1.BackendTLSPolicyList { return &gatewayv1.BackendTLSPolicyList{} })
}
