// Package security assembles a gateway proxy's request authentication
// (pilot/pkg/networking/authn: RequestAuthentication -> jwt_authn) and
// authorization (pilot/pkg/networking/authz: AuthorizationPolicy -> RBAC
// and ext_authz) into the model.GatewaySecurity the listener translator
// places, as istiod's authn and authz plugins do for a gateway. The
// server computes it per proxy and keys gateway groups by its Key, so
// that proxies with the same policies share one translation.
package security
