package gatewayapi

import (
	"slices"

	gw "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// SupportedFeatures are the Gateway API features (as
// sigs.k8s.io/gateway-api/pkg/features names them) Wayfinder implements:
// the one list, written to status.supportedFeatures of every GatewayClass
// it handles (GatewayClassStatus) and claimed by the conformance run,
// which the suite checks against that status. istiod 1.29 claims
// features.AllFeatures (supported_features.go); Wayfinder lists exactly
// what it serves, so a feature is added here when it lands, with its
// tests.
//
// Left out, and why: GatewayStaticAddresses (spec.addresses of type
// IPAddress are not assigned: the address is the Service's),
// HTTPRouteBackendRequestHeaderModification (filters on a backendRef
// are ignored), TLSRouteModeMixed (Terminate and Passthrough on one port
// are refused: tlsmodes.go), UDPRoute and the Mesh
// features (no UDP listeners, no mesh routing of Gateway API routes).
var SupportedFeatures = []features.FeatureName{
	// Core of the profiles.
	features.SupportGateway,
	features.SupportHTTPRoute,
	features.SupportGRPCRoute,
	features.SupportReferenceGrant,
	features.SupportTLSRoute,
	features.SupportTCPRoute,

	// Gateway.
	features.SupportGatewayPort8080,
	features.SupportGatewayHTTPListenerIsolation, // one virtual host per hostname and listener
	features.SupportGatewayInfrastructure,        // labels and annotations onto what the deployer makes
	features.SupportGatewayAddressEmpty,          // the address is the Service's
	features.SupportListenerSet,

	// TLS.
	features.SupportTLSRouteModeTerminate,
	features.SupportBackendTLSPolicy,
	features.SupportBackendTLSPolicySANValidation,
	features.SupportGatewayFrontendClientCertificateValidation,                 // spec.tls.frontend: frontendtls.go
	features.SupportGatewayFrontendClientCertificateValidationInsecureFallback, // AllowInsecureFallback: OPTIONAL_MUTUAL
	features.SupportGatewayBackendClientCertificate,                            // spec.tls.backend: backendclient.go

	// HTTPRoute.
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteDestinationPortMatching, // parentRefs port
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRouteBackendProtocolH2C,       // appProtocol kubernetes.io/h2c
	features.SupportHTTPRouteBackendProtocolWebSocket, // websocket upgrades on every HTTP listener
	features.SupportHTTPRouteCORS,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteRetry,
	features.SupportHTTPRouteRetryBackendTimeout,  // backendRequest as the per-try timeout (retry.go)
	features.SupportHTTPRouteRetryConnectionError, // connect-failure among retryOn (retry.go)
	// sessionPersistence is served (session.go) but has no feature name
	// in v1.6.3: nothing to claim.

	// GRPCRoute.
	features.SupportGRPCRouteNamedRouteRule,
}

// supportedFeatures is SupportedFeatures as a GatewayClass status lists
// them: sorted by name, as the specification asks.
func supportedFeatures() []gw.SupportedFeature {
	names := make([]string, len(SupportedFeatures))
	for i, f := range SupportedFeatures {
		names[i] = string(f)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]gw.SupportedFeature, len(names))
	for i, n := range names {
		out[i] = gw.SupportedFeature{Name: gw.FeatureName(n)}
	}
	return out
}
