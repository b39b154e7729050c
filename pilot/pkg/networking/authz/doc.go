// Package authz translates security.istio.io AuthorizationPolicy into the
// RBAC and ext_authz filters of one gateway proxy, as istiod 1.29's
// authorization builder does (pilot/pkg/security/authz/builder and model,
// pilot/pkg/security/trustdomain, the policy selection of
// pilot/pkg/model/authorization.go and policyattachment.go).
//
// It is a pure translator: Build takes every AuthorizationPolicy, the root
// namespace, the proxy (attached by policyattach, the rule shared with
// Telemetry and RequestAuthentication), the mesh config (trust domain and
// aliases, extension providers) and a resolver for provider clusters, and
// returns filters for the places istiod puts them:
//
//   - CustomHTTPFilters, first in the HTTP connection manager: for CUSTOM
//     policies an RBAC filter whose shadow rules, named
//     istio-ext-authz-ns[NS]-policy[NAME]-rule[N], mark the requests they
//     match, then the provider's ext_authz filter (built by extauthz.go),
//     enabled only for marked requests;
//   - HTTPFilters, after jwt_authn: one RBAC filter each for AUDIT, DENY
//     and ALLOW, in istiod's order, rules named ns[NS]-policy[NAME]-rule[N],
//     dry-run policies (istio.io/dry-run) as shadow rules with istiod's
//     stat prefixes (istio_dry_run_allow_, istio_dry_run_deny_);
//   - TCPFilters, for TCP and TLS-passthrough chains: the same as network
//     filters, HTTP-only fields handled as istiod does.
//
// Envoy evaluates them in that order, which is Istio's CUSTOM -> DENY ->
// ALLOW: a request is denied if any DENY rule matches, then allowed only
// if some ALLOW rule matches (when there is an ALLOW policy at all).
//
// # What cannot be served
//
// istiod's rule for what it cannot translate is kept, and applied to every
// failure, so a policy never opens a gateway wider than its author meant:
//
//   - ALLOW: a rule with any value that cannot be translated (a malformed
//     CIDR or port, a bad header or claim key, an invalid path template, an
//     unknown `when` key, an HTTP-only field on a TCP chain) is left out:
//     it allows nothing. A policy without rules allows nothing.
//   - DENY and AUDIT: the value (or condition) that cannot be translated is
//     left out, so the rule matches more: it denies (audits) more. For an
//     unknown `when` key istiod drops the whole rule, which would deny
//     less; Wayfinder drops the condition instead.
//   - CUSTOM: as DENY, the rule sends more requests to the provider; a
//     provider that is missing, invalid, not an ext_authz provider, or not
//     the only one the gateway's CUSTOM policies name, turns the CUSTOM
//     rules into an enforcing DENY (istiod's
//     ...-deny-due-to-bad-CUSTOM-action).
//
// As in istiod 1.29, a dry-run CUSTOM policy has no effect at all (its
// rules are neither sent to the provider nor counted), and the gateway's
// CUSTOM policies may name one provider only.
//
// Every such case is in Result.Problems with the policy and the field;
// HTTP-only fields on TCP chains, expected in istiod, are warnings.
// Values are checked one by one against Envoy's validation, so a value
// Envoy would refuse costs that rule, never the whole listener.
//
// # Route-level policies (beyond istiod)
//
// A policy whose targetRefs name an HTTPRoute or GRPCRoute
// (gateway.networking.k8s.io) or a VirtualService (networking.istio.io)
// of its own namespace, and that does not apply to the gateway as a whole,
// applies to the routes of that object when the gateway serves it
// (Input.Routes), wherever the gateway runs: the route's team protects its
// route without touching the shared gateway. A policy that targets both
// the Gateway and a route is gateway-level.
//
// Envoy looks a route's typed_per_filter_config up by filter name, and
// every gateway-level RBAC filter is named envoy.filters.http.rbac, so a
// per-route config under that name would replace the gateway's CUSTOM,
// AUDIT, DENY and ALLOW configs alike on that route. Route-level policies
// therefore get RBAC filters of their own, one per action in use
// (RouteAuditFilterName, RouteDenyFilterName, RouteAllowFilterName), at
// the end of HTTPFilters, with no rules of their own (they do nothing on
// other routes), and each route with policies gets RBACPerRoute configs
// for them (Result.RouteConfigs), its policies translated exactly as
// gateway-level ones. The order on the chain makes the composition: a
// request to such a route passes the gateway's CUSTOM, DENY and ALLOW
// filters first, then the route's DENY, then the route's ALLOW, so a
// route-level policy only ever adds conditions; it cannot allow what the
// gateway's policies deny or fail to allow. CUSTOM cannot target a route
// (ext_authz is gated by the gateway's CUSTOM RBAC filter): such a policy
// is reported and its rules deny what they match on that route.
//
// # Beyond istiod 1.29
//
// Source.trustDomains and the source.trustDomain condition (istio/api
// 1.31, istiod 1.30) are served as istiod 1.30 serves them, since the API
// Wayfinder reads has them and ignoring them would widen an ALLOW.
package authz
