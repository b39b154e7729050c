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
