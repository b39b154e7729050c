package model

// GatewayClientCAAnnotationPrefix, followed by a server's
// tls.caCertCredentialName, is the annotation of an Istio Gateway
// generated from a Gateway API Gateway that carries the CA bundle (PEM,
// already parsed by the conversion) verifying client certificates on that
// server (spec.tls.frontend, client certificate validation). Wayfinder's
// gateways run without an agent, and a CA certificate is public, so the
// listener translator puts the bundle in the listener's validation
// context rather than serving it over SDS (where istiod resolves the
// configmap:// or kubernetes-gateway:// name): a change of the ConfigMap
// or Secret converts again and pushes the changed listener. Like
// BackendTLSCAAnnotationPrefix, it confers nothing an Istio Gateway's
// author could not already choose (caCertificates): it only narrows which
// clients that Gateway's own proxies accept.
const GatewayClientCAAnnotationPrefix = "internal.wayfinder.io/gateway-client-ca."

// clientCA is the inline client CA bundle of a server of Gateway
// annotations ann, "" when none is carried.
func clientCA(ann map[string]string, caCertCredentialName string) string {
	if caCertCredentialName == "" {
		return ""
	}
	return ann[GatewayClientCAAnnotationPrefix+caCertCredentialName]
}
