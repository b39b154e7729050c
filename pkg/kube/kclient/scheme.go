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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Scheme holds the kinds Wayfinder reads and writes: the Kubernetes groups
// below, Istio's networking.istio.io/v1 (and v1alpha3 for EnvoyFilter), security.istio.io/v1 and telemetry.istio.io/v1, and the Gateway API's
// gateway.networking.k8s.io/v1. Event references (record.EventRecorder)
// are resolved with it too.
var Scheme = runtime.NewScheme()

// Codecs and ParameterCodec encode and decode with Scheme.
var (
	Codecs         = serializer.NewCodecFactory(Scheme)
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	b := runtime.NewSchemeBuilder(
		corev1.AddToScheme,
		discoveryv1.AddToScheme,
		networkingv1.AddToScheme,
		appsv1.AddToScheme,
		coordinationv1.AddToScheme,
		authenticationv1.AddToScheme,
		authorizationv1.AddToScheme,
		rbacv1.AddToScheme,
		istionetworkingv1.AddToScheme,
		istionetworkingv1alpha3.AddToScheme,
		istiotelemetryv1.AddToScheme,
		istiosecurityv1.AddToScheme,
		gatewayv1.Install,
	)
	utilruntime.Must(b.AddToScheme(Scheme))
}
