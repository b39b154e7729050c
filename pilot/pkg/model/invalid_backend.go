package model

// InvalidBackendHost is the destination host the Gateway API conversion
// gives the share of a rule's traffic that its invalid backendRefs would
// have had (a Service that does not exist, another namespace's without a
// ReferenceGrant, an unsupported kind). The Gateway API asks for a 500 for
// exactly those requests, while the valid backends keep their share.
//
// The route translator never resolves this host against services: it
// names the cluster InvalidBackendCluster, which no translator generates,
// and sets the route's cluster_not_found_response_code to 500. Envoy then
// answers every request the weighted pick sends there with a 500, as
// istiod's gateway routes do for their unresolved backends. The host is
// under the reserved ".invalid" top-level domain (RFC 6761), so it can
// never be a real name; a ServiceEntry declaring it changes nothing, since
// the host is not looked up.
const InvalidBackendHost = "invalid-backend.gateway-api.invalid"

// InvalidBackendCluster is the cluster name InvalidBackendHost translates
// to. It is not "outbound|..." so no service's cluster can ever have it,
// and it is never generated: RDS does not validate clusters (Wayfinder's
// route configurations set validate_clusters false, as istiod's), so
// Envoy accepts the route and answers the cluster's share with the
// route's cluster_not_found_response_code.
const InvalidBackendCluster = "gateway-api-invalid-backend"
