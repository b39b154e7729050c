package security

import (
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authn"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/authz"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Options are what ForProxy needs besides the push and the proxy.
type Options struct {
	// JWKS resolves jwksUri and issuer discovery; nil serves every rule
	// without inline jwks fail-closed.
	JWKS authn.JWKSResolver
}

// ForProxy is the authentication and authorization of proxy p's gateway
// listeners under push (which should be push.ForProxy(p), with p's
// gateway topology set): the RequestAuthentications and
// AuthorizationPolicies of the root namespace and p's namespace that
// select it, the mesh config's trust domain and ext_authz providers.
// Nil when no policy exists at all (nothing to place).
func ForProxy(push *model.PushContext, p *model.Proxy, opts Options) *model.GatewaySecurity {
	ras, aps := push.RequestAuthentications(), push.AuthorizationPolicies()
	if len(ras) == 0 && len(aps) == 0 {
		return nil
	}
	proxy := policyattach.Proxy{Namespace: p.Namespace, Labels: p.Labels}
	raPolicies, apPolicies := requestAuthentications(ras), authorizationPolicies(aps)
	var routes []policyattach.RouteRef
	var origins map[policyattach.RouteRef]string
	if targetsRoutes(raPolicies, apPolicies) {
		routes, origins = servedRoutes(push, p)
	}
	an := authn.Build(authn.Input{
		Policies:      raPolicies,
		RootNamespace: push.RootNamespace(),
		Proxy:         proxy,
		JWKS:          opts.JWKS,
		Routes:        routes,
	})
	topo := push.GatewayTopology()
	az := authz.Build(authz.Input{
		Policies:      apPolicies,
		RootNamespace: push.RootNamespace(),
		Proxy:         proxy,
		Mesh:          push.Mesh(),
		Clusters:      authz.ProviderClusters(push),
		TCP:           hasTCPChains(push.GatewaysForProxy(p)),
		TrustedHops:   topo.NumTrustedProxies > 0 || topo.ProxyProtocol,
		Routes:        routes,
	})
	s := &model.GatewaySecurity{
		CustomHTTP: az.CustomHTTPFilters,
		AuthnHTTP:  an.Filters,
		AuthzHTTP:  az.HTTPFilters,
		CustomTCP:  az.CustomTCPFilters,
		AuthzTCP:   az.TCPFilters,
		Policies:   slices.Concat(an.Applied, az.Applied),
		Problems:   slices.Concat(an.Problems, az.Problems),
	}
	s.RouteConfigs, s.Problems = routeConfigs(an, az, origins, s.Problems)
	if len(s.Policies) == 0 && len(s.Problems) == 0 && len(s.HTTPFilters()) == 0 && len(s.NetworkFilters()) == 0 {
		return nil
	}
	s.Key = key(s)
	return s
}

func requestAuthentications(cfgs []config.Config) []authn.RequestAuthentication {
	out := make([]authn.RequestAuthentication, 0, len(cfgs))
	for _, c := range cfgs {
		if spec, ok := c.Spec.(*securityv1beta1.RequestAuthentication); ok {
			out = append(out, authn.RequestAuthentication{Name: c.Name, Namespace: c.Namespace, CreationTime: c.CreationTimestamp, Spec: spec})
		}
	}
	return out
}

func authorizationPolicies(cfgs []config.Config) []authz.Policy {
	out := make([]authz.Policy, 0, len(cfgs))
	for _, c := range cfgs {
		if spec, ok := c.Spec.(*securityv1beta1.AuthorizationPolicy); ok {
			out = append(out, authz.Policy{Name: c.Name, Namespace: c.Namespace, CreationTime: c.CreationTimestamp,
				Annotations: c.Annotations, Spec: spec})
		}
	}
	return out
}

// key hashes what s puts on the listeners and routes and which objects
// it came from: equal keys give identical listeners, routes and status
// attribution.
func key(s *model.GatewaySecurity) string {
	h := protoconv.NewHasher()
	protoconv.Messages(h, s.CustomHTTP)
	protoconv.Messages(h, s.AuthnHTTP)
	protoconv.Messages(h, s.AuthzHTTP)
	protoconv.Messages(h, s.CustomTCP)
	protoconv.Messages(h, s.AuthzTCP)
	for _, o := range slices.Sorted(maps.Keys(s.RouteConfigs)) {
		h.String(o)
		for _, name := range slices.Sorted(maps.Keys(s.RouteConfigs[o])) {
			h.String(name)
			h.Message(s.RouteConfigs[o][name])
		}
	}
	for _, k := range s.Policies {
		h.String(k.String())
	}
	for _, e := range s.Problems {
		msg := e.Error()
		if e.Warning {
			msg = "warning: " + msg
		}
		h.String(msg)
	}
	return h.Sum()
}

// hasTCPChains reports whether gateways may give a proxy TCP filter chains
// (TCP, TLS and other non-HTTP servers, HTTPS in PASSTHROUGH mode): only
// then are the network filters built, and HTTP-only rule fields reported
// for them. When in doubt it says yes: without the network filters a TCP
// chain would not be authorized at all.
func hasTCPChains(gws []config.Config) bool {
	for _, gw := range gws {
		spec, ok := gw.Spec.(*networking.Gateway)
		if !ok {
			return true
		}
		for _, s := range spec.GetServers() {
			proto := strings.ToUpper(s.GetPort().GetProtocol())
			switch {
			case model.IsHTTPProtocol(proto):
			case proto == "HTTPS" && s.GetTls().GetMode() != networking.ServerTLSSettings_PASSTHROUGH:
			default:
				return true
			}
		}
	}
	return false
}
