package model

import "strings"

// DestinationRules generated from Gateway API BackendTLSPolicies name their
// CA as istiod 1.29 does (backend_policies.go getBackendTLSCredentialName):
// credentialName "configmap://NAMESPACE/NAME" for the ConfigMap a policy's
// caCertificateRefs names, and "invalid://" when no CA reference could be
// resolved, so that the backend's clusters cannot be used (the Gateway API
// asks for a 5xx, never for plaintext or an unverified connection).
const (
	ConfigMapCredentialPrefix = "configmap://"
	InvalidCredentialName     = "invalid://"
	// BackendTLSCAAnnotationPrefix, followed by a configmap:// credential
	// name, is the annotation of a generated DestinationRule that carries
	// that CA bundle (PEM, already parsed by the conversion). Wayfinder's
	// gateways run without an agent, and a CA certificate is public, so
	// the cluster translator puts the bundle in the cluster itself rather
	// than serving it over SDS (where istiod resolves configmap:// names):
	// a ConfigMap change reconverts and pushes the changed clusters. The
	// annotation confers nothing a DestinationRule's author could not
	// already choose (caCertificates, insecureSkipVerify).
	BackendTLSCAAnnotationPrefix = "internal.wayfinder.io/backend-tls-ca."
)

// IsBackendTLSCredential reports whether a DestinationRule credentialName
// is one of the BackendTLSPolicy forms above, which name no Secret.
func IsBackendTLSCredential(name string) bool {
	return name == InvalidCredentialName || strings.HasPrefix(name, ConfigMapCredentialPrefix)
}

// BackendClientCertificateAnnotation is the annotation of the Istio
// Gateways generated for a Gateway API Gateway whose
// spec.tls.backend.clientCertificateRef resolved: its value is the
// credentialName of that Secret ("kubernetes-gateway://NAMESPACE/NAME").
// The proxies such a Gateway selects, in its namespace, present that
// certificate on the connections a BackendTLSPolicy's TLS settings
// originate (PushContext.BackendClientCertificate). The Secret is sent
// to them as a Gateway's own is (SecretScope.Refusal, the generated
// Gateway as owner), so an Istio Gateway written with the annotation gets
// no Secret its own servers could not name.
const BackendClientCertificateAnnotation = "internal.wayfinder.io/backend-client-certificate"

// BackendTLSPolicyAnnotation marks a DestinationRule generated from
// BackendTLSPolicies (its value names them): the TLS settings of its
// traffic policy and port-level settings are theirs, which a Gateway's
// backend client certificate (BackendClientCertificateAnnotation) is
// presented on. Written on a user's rule it only makes such a Gateway
// present its own certificate to that rule's hosts too.
const BackendTLSPolicyAnnotation = "internal.wayfinder.io/backend-tls-policy"
