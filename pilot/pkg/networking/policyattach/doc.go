// Package policyattach decides which policies (Telemetry,
// RequestAuthentication, AuthorizationPolicy) apply to a gateway proxy,
// as istiod's WorkloadPolicyMatcher (pilot/pkg/model/policyattachment.go)
// does for a gateway that is not a waypoint: by `selector` against the
// proxy's labels, or by `targetRefs` to the Gateway API Gateway the proxy
// is deployed for. The translators share it so that every policy kind
// attaches by one rule.
package policyattach
