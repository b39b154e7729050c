// Package authn translates RequestAuthentication (security.istio.io) into
// the jwt_authn HTTP filter of a gateway's HTTP connection managers, as
// istiod 1.29 does (pilot/pkg/networking/plugin/authn, pilot/pkg/security/
// authn/policy_applier.go). It is a pure translator: key sets named by
// jwksUri come from a JWKSResolver (pkg/jwks in the server).
//
// Which policies apply (istiod's getConfigsForWorkload with its
// WorkloadPolicyMatcher, through policyattach.Selects): those of the
// proxy's namespace, then those of the root namespace, each oldest first,
// that select the proxy by labels (a policy without a selector selects
// every proxy of its namespace) or, for a Gateway API gateway, by a
// targetRef to its Gateway. Every rule of every applied policy becomes one
// provider; the rules are sorted by issuer and named origins-0, origins-1,
// ... in that order. One rule at prefix "/" requires, for one provider,
// {provider OR allow_missing}, for several, OR{P0, P1, ..., AND{OR{P0,
// allow_missing}, OR{P1, allow_missing}, ...}}: a request without a token
// passes (authorization decides), a request with a token that no provider
// accepts gets 401. Every provider writes the verified claims to dynamic
// metadata "envoy.filters.http.jwt_authn" / "payload" (scope and permission
// split on spaces), where AuthorizationPolicy's request.auth.* matchers
// read them; istiod 1.29 emits no istio_authn filter, so upstream Envoy
// gets the same filters istio-proxy does.
//
// Fail-closed: a rule whose key set is unknown (fetch failed, no resolver)
// is served as istiod serves it, with PublicOnlyJWKS, a key no token can
// match; a rule istiod's validation would reject (bad jwksUri, jwks that
// is not a key set, empty locations, a bad claim header) is served the
// same way and reported in Problems with its field. Either way its issuer's
// tokens are rejected and nothing is let through that the author meant to
// check. istiod rejects such an object at admission instead; here the
// object's valid rules are still served.
//
// Route-level policies (beyond istiod): a policy whose targetRefs name an
// HTTPRoute or GRPCRoute (gateway.networking.k8s.io) or a VirtualService
// (networking.istio.io) of its own namespace, and that does not apply to
// the gateway as a whole, applies to the routes of that object when the
// gateway serves it (Input.Routes). Its rules become providers named
// route-origins-NAMESPACE/NAME-RULEINDEX, and the filter's requirement_map
// gets one entry per route object, named route/KIND/NAMESPACE/NAME, whose
// requirement is istiod's requirement over the gateway-level rules and the
// route's own rules together, sorted by issuer. The caller puts
// PerRouteConfig(name) in typed_per_filter_config of every Envoy route
// generated from that object. Envoy uses a route's per-route requirement
// instead of the filter's rules, which is why the gateway's providers are
// part of it: a route-level policy adds issuers a route accepts (and
// validates); it never removes the gateway's. Routes without route-level
// policies keep the filter's rules. A policy that targets both the Gateway
// and a route is gateway-level.
package authn
