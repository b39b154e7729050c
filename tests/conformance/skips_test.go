package conformance

// skipped are the conformance tests that never run here, each with why.
// Every other test runs until its first request through a Gateway (see
// trafficGate); these send theirs where the harness cannot stop them
// (from goroutines of their own, or by dialing TCP, TLS, UDP or WebSocket
// themselves), or read Pod logs, which needs a kubelet. Run, they would
// dial the Gateway's address and fail after a timeout.
var skipped = map[string]string{
	"GRPCRouteWeight":                       "sends its RPCs from goroutines of its own to measure the weights",
	"HTTPRouteWeight":                       "sends its requests from goroutines of its own to measure the weights",
	"HTTPRouteRequestPercentageMirror":      "sends its requests from goroutines of its own and reads the backends' logs, which needs a kubelet",
	"HTTPRouteRequestMirror":                "reads the mirror backends' logs, which needs a kubelet, before its first request",
	"HTTPRouteRequestMultipleMirrors":       "reads the mirror backends' logs, which needs a kubelet, before its first request",
	"HTTPRouteBackendProtocolWebSocket":     "dials a WebSocket through the Gateway (the dialer has no test to stop)",
	"TCPRouteMultipleRoutesAttachment":      "dials TCP through the Gateway itself",
	"TCPRouteParentRefAttachAll":            "dials TCP through the Gateway itself",
	"TCPRouteParentRefPortAndSectionName":   "dials TCP through the Gateway itself",
	"TCPRouteReferenceGrant":                "dials TCP through the Gateway itself",
	"TCPRouteWeightedRouting":               "dials TCP through the Gateway itself, from goroutines of its own",
	"TLSRouteHostnameIntersection":          "dials TLS through the Gateway itself",
	"TLSRouteInvalidBackendRefNonexistent":  "dials TLS through the Gateway itself to see the connection refused",
	"TLSRouteInvalidBackendRefUnknownKind":  "dials TLS through the Gateway itself to see the connection refused",
	"TLSRouteMixedTerminationSameNamespace": "dials TLS through the Gateway itself",
	"TLSRouteSimpleSameNamespace":           "dials TLS through the Gateway itself",
	"TLSRouteTerminateSimpleSameNamespace":  "dials TLS through the Gateway itself",
	"UDPRouteParentRefAttachAllListeners":   "sends UDP through the Gateway itself",
	"UDPRouteParentRefPortAndSectionName":   "sends UDP through the Gateway itself",
	"UDPRouteReferenceGrant":                "sends UDP through the Gateway itself",
	"UDPRouteWeightedRouting":               "sends UDP through the Gateway itself, from goroutines of its own",
	"UDPRoute":                              "sends UDP through the Gateway itself",
}

// expectedFailures are conformance tests that fail today because what they
// check is still being built; each says what is missing. `make test` does
// not run them (they are skipped with this reason); `make conformance`
// runs them and fails on any that passes, so that this list only shrinks.
// Remove an entry when its feature lands.
var expectedFailures = map[string]string{}

// reportOnly are tests `make test` leaves to `make conformance`, to keep
// `make test` short: the status each checks before its first request is
// the one HTTPRouteSimpleSameNamespace checks (an HTTPRoute on the shared
// Gateway Accepted, with its references resolved); everything after that
// is traffic. The HTTPRoute fields still being built (CORS, retry,
// timeouts) stay in `make test`.
var reportOnly = map[string]string{}

func init() {
	for _, name := range []string{
		"HTTPRoute303Redirect", "HTTPRoute307Redirect", "HTTPRoute308Redirect",
		"HTTPRouteRedirectHostAndStatus", "HTTPRouteRedirectPath", "HTTPRouteRedirectPort",
		"HTTPRouteRedirectPortAndScheme", "HTTPRouteRedirectScheme", "HTTPRouteRewriteHost", "HTTPRouteRewritePath",
		"HTTPRouteRequestHeaderModifier", "HTTPRouteResponseHeaderModifier",
		"HTTPRouteExactPathMatching", "HTTPRouteHeaderMatching", "HTTPRouteQueryParamMatching", "HTTPRouteMethodMatching",
		"HTTPRouteMatching", "HTTPRouteMatchingAcrossRoutes", "HTTPRoutePathMatchOrder",
		"GRPCExactMethodMatching", "GRPCRouteHeaderMatching",
	} {
		reportOnly[name] = "its status part is HTTPRouteSimpleSameNamespace's; the rest is traffic"
	}
}
