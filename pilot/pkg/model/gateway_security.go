package model

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// GatewaySecurity is the request authentication (RequestAuthentication ->
// jwt_authn) and authorization (AuthorizationPolicy -> RBAC, CUSTOM ->
// ext_authz) of one gateway group's listeners, as the authn and authz
// translators (pilot/pkg/networking/authn, authz) built them for the
// group's proxies. The model only carries it: the server computes it per
// proxy, keys the gateway group by it, and the listener translator puts
// the filters where istiod does (buildHTTPConnectionManager: CUSTOM, then
// authn, then authz, before fault, CORS and the router;
// buildNetworkFiltersStack: CUSTOM, then authz, before tcp_proxy). Its
// protos are shared: read only.
type GatewaySecurity struct {
	// CustomHTTP are the CUSTOM action's filters (the RBAC filter whose
	// shadow rules mark requests for the external authorizer, and the
	// ext_authz filter gated on that mark).
	CustomHTTP []*hcmv3.HttpFilter
	// AuthnHTTP is the JWT authentication filter.
	AuthnHTTP []*hcmv3.HttpFilter
	// AuthzHTTP are the RBAC filters of the DENY, ALLOW and AUDIT actions.
	AuthzHTTP []*hcmv3.HttpFilter
	// CustomTCP and AuthzTCP are the network filters of TCP and TLS
	// passthrough chains, placed before tcp_proxy.
	CustomTCP []*listenerv3.Filter
	AuthzTCP  []*listenerv3.Filter
	// RouteConfigs are the route-level policies (beyond istiod: policies
	// whose targetRefs name an HTTPRoute, GRPCRoute or VirtualService):
	// per route origin ("vs/NS/NAME", "httproute/NS/NAME",
	// "grpcroute/NS/NAME", as the routes' stat_prefix begins), the
	// typed_per_filter_config entries for every route generated from that
	// object. The filters they configure are in AuthnHTTP and AuthzHTTP.
	RouteConfigs map[string]map[string]*anypb.Any
	// Policies are the RequestAuthentication and AuthorizationPolicy
	// objects that apply: the objects this group's listeners depend on,
	// for their status.
	Policies []config.Key
	// Problems say what the translators could not serve and what they
	// did instead (a rule that matches nothing, a CUSTOM provider that
	// denies), against the object and field responsible.
	Problems []*config.Error
	// Key names the filters: two values with one key give identical
	// listeners (the server keys gateway groups by it).
	Key string
}

// GatewaySecurity is the security the listeners of ps are built with
// (WithGatewaySecurity); nil: none (no policy applies).
func (ps *PushContext) GatewaySecurity() *GatewaySecurity {
	if ps == nil {
		return nil
	}
	return ps.security
}

// WithGatewaySecurity returns ps building listeners with security s,
// sharing every index and the view of ps. What s depends on (the
// proxy's namespace, labels and Gateway API gateway) is part of the
// gateway group key: the caller keys the translation by it.
func (ps *PushContext) WithGatewaySecurity(s *GatewaySecurity) *PushContext {
	if ps.security == s {
		return ps
	}
	next := *ps
	next.base = ps.Base()
	next.security = s
	return &next
}

// HTTPFilters are the HTTP filters of s in istiod's order; nil s has none.
func (s *GatewaySecurity) HTTPFilters() []*hcmv3.HttpFilter {
	if s == nil {
		return nil
	}
	out := make([]*hcmv3.HttpFilter, 0, len(s.CustomHTTP)+len(s.AuthnHTTP)+len(s.AuthzHTTP))
	out = append(out, s.CustomHTTP...)
	out = append(out, s.AuthnHTTP...)
	return append(out, s.AuthzHTTP...)
}

// NetworkFilters are the network filters of s in istiod's order; nil s
// has none.
func (s *GatewaySecurity) NetworkFilters() []*listenerv3.Filter {
	if s == nil {
		return nil
	}
	out := make([]*listenerv3.Filter, 0, len(s.CustomTCP)+len(s.AuthzTCP))
	out = append(out, s.CustomTCP...)
	return append(out, s.AuthzTCP...)
}

// GetPolicies reads s.Policies; nil s has none.
func (s *GatewaySecurity) GetPolicies() []config.Key {
	if s == nil {
		return nil
	}
	return s.Policies
}

// GetProblems reads s.Problems; nil s has none.
func (s *GatewaySecurity) GetProblems() []*config.Error {
	if s == nil {
		return nil
	}
	return s.Problems
}

// GetRouteConfigs reads s.RouteConfigs; nil s has none.
func (s *GatewaySecurity) GetRouteConfigs() map[string]map[string]*anypb.Any {
	if s == nil {
		return nil
	}
	return s.RouteConfigs
}
