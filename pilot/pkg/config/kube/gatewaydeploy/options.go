package gatewaydeploy

import (
	"cmp"
	"fmt"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// DefaultImage is the Envoy the gateway proxies run: the official image
// of the Envoy release whose API go-control-plane v1.40 (Wayfinder's) is
// generated from.
const DefaultImage = "envoyproxy/envoy:v1.40.0"

// FieldManager is the server-side apply field manager of everything the
// deployer applies.
const FieldManager = "wayfinder-gateway-deployer"

// SecretVerbs are what each Gateway's Role grants its ServiceAccount on
// the Secrets of its namespace. pilot-discovery must hold them itself to
// grant them (the API server's RBAC escalation check).
var SecretVerbs = []string{"get", "list", "watch"}

// ManagedLabel marks every object the deployer applies; its informers
// watch only objects carrying it.
const (
	ManagedLabel      = "gateway.wayfinder.io/managed"
	ManagedLabelValue = "wayfinder.io-gateway-controller"
	// ClassLabel is the Gateway API's label naming a deployed Gateway's
	// class.
	ClassLabel = "gateway.networking.k8s.io/gateway-class-name"
	// BootstrapHashAnnotation on the pod template changes with the
	// bootstrap, so a new bootstrap rolls the pods.
	BootstrapHashAnnotation = "gateway.wayfinder.io/bootstrap-hash"
)

// Options configure what the deployer renders for each Gateway. Flags are
// parsed into it in cmd; nothing reads the environment.
type Options struct {
	// Disabled turns automated deployment off: Gateways then need their
	// proxies deployed by hand (their status still follows their Service).
	Disabled bool
	// Image of the Envoy container; default DefaultImage.
	Image string
	// XDSAddress is host:port of Wayfinder's secure ADS port as the
	// proxies dial it; its host is the name Wayfinder's serving
	// certificate is verified for. Default
	// pilot-discovery.NAMESPACE.svc:15012 (NAMESPACE: Wayfinder's own),
	// set by bootstrap.
	XDSAddress string
	// RootCertPEM is the CA the proxies verify Wayfinder's serving
	// certificate with, copied into each Gateway's ConfigMap: the
	// self-signed CA when Wayfinder keeps one. Empty: the image's system
	// roots.
	RootCertPEM []byte
	// ClusterID is the CLUSTER_ID node metadata; default "Kubernetes".
	ClusterID string
	// DomainSuffix ends the node ID; default cluster.local.
	DomainSuffix string
	// ServiceType of each Gateway's Service unless the Gateway's
	// networking.istio.io/service-type annotation says otherwise; default
	// LoadBalancer, as istiod.
	ServiceType corev1.ServiceType
	// TokenAudience of the projected ServiceAccount token the proxies
	// present; default "wayfinder" (one of --token-audiences).
	TokenAudience string
	// DefaultProxyConfig returns the mesh config's defaultConfig in
	// force, which a Gateway's proxy.istio.io/config annotation is merged
	// over (ProxyConfigAnnotation); nil: istiod's defaults. A change
	// re-renders only annotated Gateways, whose pods then roll.
	DefaultProxyConfig func() *meshconfig.ProxyConfig
}

// WithDefaults fills in what is not set.
func (o Options) WithDefaults() Options {
	o.Image = cmp.Or(o.Image, DefaultImage)
	o.ClusterID = cmp.Or(o.ClusterID, "Kubernetes")
	o.DomainSuffix = cmp.Or(o.DomainSuffix, model.DefaultDomainSuffix)
	o.ServiceType = cmp.Or(o.ServiceType, corev1.ServiceTypeLoadBalancer)
	o.TokenAudience = cmp.Or(o.TokenAudience, "wayfinder")
	return o
}

// Validate rejects options that cannot render a working Deployment.
func (o Options) Validate() error {
	if o.Disabled {
		return nil
	}
	if o.XDSAddress == "" {
		return fmt.Errorf("gateway deployment: the xDS address the proxies dial is not set (--gateway-xds-address)")
	}
	if !validServiceType(o.ServiceType) {
		return fmt.Errorf("--gateway-service-type %q: want ClusterIP, NodePort or LoadBalancer", o.ServiceType)
	}
	return nil
}

func validServiceType(t corev1.ServiceType) bool {
	switch t {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		return true
	}
	return false
}
