package crdclient

import (
	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	telemetryv1 "istio.io/client-go/pkg/apis/telemetry/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// apiVersion is the version of a kind's group the controller watches, the
// schema's preferred one: networking.istio.io/v1, telemetry.istio.io/v1,
// security.istio.io/v1, and networking.istio.io/v1alpha3 for EnvoyFilter.
func apiVersion(kind schema.Kind) string {
	s := schema.ByKind(kind)
	return s.Group + "/" + s.Versions[0]
}

// Source returns the config.Meta Source of a Kubernetes object,
// "kube://namespace/name".
func Source(namespace, name string) string { return "kube://" + namespace + "/" + name }

// convert turns an object from an informer into a config.Config that
// shares the object's spec and label and annotation maps: like every
// config a store hands out, it must not be mutated (config.Config), and
// the informer never changes a cached object in place (an update replaces
// it). Deep copies held every Istio object twice, once in the informer's
// cache and once here (12 MB at 5,000 VirtualServices and
// DestinationRules). ok is false for an object of a type this package does
// not watch.
func convert(obj any) (cfg config.Config, meta *metav1.ObjectMeta, ok bool) {
	switch o := obj.(type) {
	case *networkingv1.Gateway:
		return build(schema.Gateway, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *networkingv1.VirtualService:
		return build(schema.VirtualService, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *networkingv1.DestinationRule:
		return build(schema.DestinationRule, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *networkingv1.ServiceEntry:
		return build(schema.ServiceEntry, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *telemetryv1.Telemetry:
		return build(schema.Telemetry, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *securityv1.RequestAuthentication:
		return build(schema.RequestAuthentication, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *securityv1.AuthorizationPolicy:
		return build(schema.AuthorizationPolicy, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	case *networkingv1alpha3.EnvoyFilter:
		return build(schema.EnvoyFilter, &o.ObjectMeta, &o.Spec), &o.ObjectMeta, true
	}
	return config.Config{}, nil, false
}

func build(kind schema.Kind, m *metav1.ObjectMeta, spec proto.Message) config.Config {
	return config.Config{
		Meta: config.Meta{
			Kind:              kind,
			Name:              m.Name,
			Namespace:         m.Namespace,
			Labels:            m.Labels,
			Annotations:       m.Annotations,
			ResourceVersion:   m.ResourceVersion,
			Generation:        m.Generation,
			CreationTimestamp: m.CreationTimestamp.Time,
			Source:            Source(m.Namespace, m.Name),
		},
		Spec: spec,
	}
}

// unwrapTombstone returns the last known object of a delete whose final
// state the informer missed (the watch was down when it happened).
func unwrapTombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// objectReference names the object an Event is about. Building it here,
// rather than letting the recorder derive it from a scheme, keeps the
// recorder free of Istio types.
func objectReference(kind schema.Kind, m *metav1.ObjectMeta) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion:      apiVersion(kind),
		Kind:            kind.String(),
		Namespace:       m.Namespace,
		Name:            m.Name,
		UID:             m.UID,
		ResourceVersion: m.ResourceVersion,
	}
}
