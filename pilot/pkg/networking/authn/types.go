package authn

import (
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// FilterName is the jwt_authn HTTP filter's name, istiod's
// EnvoyJwtFilterName; AuthorizationPolicy's request.auth.* matchers read
// dynamic metadata under it.
const FilterName = "envoy.filters.http.jwt_authn"

// PayloadMetadataKey is where every provider writes the verified token's
// claims within FilterName's dynamic metadata (istiod's
// EnvoyJwtFilterPayload).
const PayloadMetadataKey = "payload"

// DefaultTimeout is istiod's jwtRule timeout when none is given: how long
// the control plane waits for a jwksUri.
const DefaultTimeout = 5 * time.Second

// RequestAuthentication is one security.istio.io RequestAuthentication as
// the translator reads it.
type RequestAuthentication struct {
	Name      string
	Namespace string
	// CreationTime orders policies as istiod does: the oldest first, then
	// by name, then by namespace.
	CreationTime time.Time
	Spec         *securityv1beta1.RequestAuthentication
}

// Key names the object in Applied and Problems.
func (r RequestAuthentication) Key() config.Key {
	return config.Key{Kind: schema.RequestAuthentication, Namespace: r.Namespace, Name: r.Name}
}

// JWKSResolver returns the key set of a jwtRule that has no inline jwks,
// by jwksUri or, when that is empty, by the issuer's OpenID discovery.
// *jwks.Resolver satisfies it. An error means no key set is known: the
// rule is served fail-closed.
type JWKSResolver interface {
	JWKS(issuer, jwksURI string, timeout time.Duration) (string, error)
}

// Input is everything the jwt_authn filter of one gateway proxy depends on.
type Input struct {
	// Policies are all RequestAuthentication objects, in any order.
	Policies []RequestAuthentication
	// RootNamespace is the mesh config's rootNamespace, whose
	// policies apply to proxies of every namespace.
	RootNamespace string
	Proxy         policyattach.Proxy
	// JWKS resolves jwksUri and issuer discovery; nil serves every rule
	// without inline jwks fail-closed.
	JWKS JWKSResolver
	// Routes are the route objects this gateway serves, for policies
	// that target a route (beyond istiod); none means no route-level
	// policy applies.
	Routes []policyattach.RouteRef
}

// Result is the request authentication of one gateway proxy.
type Result struct {
	// Filters are the HTTP filters istiod's authn builder puts on a
	// gateway's HTTP connection managers, in order: none, or jwt_authn.
	// They go after the CUSTOM authorization filters and before the other
	// RBAC filters (istiod's buildHTTPConnectionManager).
	Filters []*hcmv3.HttpFilter
	// RouteRequirements maps each route (of Input.Routes) that has its own
	// RequestAuthentications to the requirement name its routes' per-route
	// config names (PerRouteConfig).
	RouteRequirements map[policyattach.RouteRef]string
	// Applied are the policies in force on this proxy, gateway-level in
	// istiod's order, then route-level ones sorted.
	Applied []config.Key
	// Problems name each object and field that could not be served as
	// written, and what was served instead (always narrower). Sorted.
	Problems []*config.Error
}

// CreationKey orders policies (policyattach.SortByCreation).
func (r RequestAuthentication) CreationKey() (time.Time, string, string) {
	return r.CreationTime, r.Name, r.Namespace
}
