package analysis

import (
	"fmt"
	"slices"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// securityFindings reports RequestAuthentications and
// AuthorizationPolicies that select no gateway or route (policyTargets),
// and AuthorizationPolicy rules that cannot do what they say:
//
//   - ipBlocks and source.ip on gateways whose clients arrive through a
//     load balancer (gatewayTopology.numTrustedProxies > 0, or the PROXY
//     protocol): they match the load balancer, remoteIpBlocks and
//     remote.ip match the client;
//   - requestPrincipals and request.auth.* conditions where no
//     RequestAuthentication applies, so no request carries a principal;
//   - paths that no route of the gateway (or targeted route) serves for
//     the rule's hosts;
//   - CUSTOM policies whose provider is not an ext_authz provider of the
//     mesh config (an error: the gateway denies what they match).
//
// As for Telemetry, a gateway proxy is assumed to carry exactly its
// Gateways' selector labels; the topology is the mesh config's
// defaultConfig one (a gateway's own proxy.istio.io/config is not known).
func securityFindings(push *model.PushContext) []*config.Error {
	a := &securityAnalysis{
		push:    push,
		root:    push.RootNamespace(),
		routes:  newRouteIndex(push),
		proxies: gatewayProxies(push),
	}
	for _, c := range push.RequestAuthentications() {
		if spec, ok := c.Spec.(*securityv1beta1.RequestAuthentication); ok {
			a.out = append(a.out, policyTargets(push, a.routes, a.kind("RequestAuthentication"), c, spec)...)
			a.authns = append(a.authns, authnPolicy{c: c, spec: spec})
		}
	}
	topo := push.GatewayTopologyFor(nil)
	for _, c := range push.AuthorizationPolicies() {
		spec, ok := c.Spec.(*securityv1beta1.AuthorizationPolicy)
		if !ok {
			continue
		}
		a.out = append(a.out, policyTargets(push, a.routes, a.kind("AuthorizationPolicy"), c, spec)...)
		a.customProvider(c, spec)
		a.ipBlocks(c, spec, topo)
		if scope := a.scopeOf(c.Namespace, spec); !scope.empty() {
			a.principals(c, spec, scope)
			a.paths(c, spec, scope)
		}
	}
	return a.out
}

type securityAnalysis struct {
	push    *model.PushContext
	root    string
	routes  *routeIndex
	proxies []gatewayProxy
	authns  []authnPolicy
	out     []*config.Error
}

type authnPolicy struct {
	c    config.Config
	spec *securityv1beta1.RequestAuthentication
}

func (a *securityAnalysis) kind(name string) policyKind {
	return policyKind{name: name, rootNamespace: a.root, routes: true}
}

func (a *securityAnalysis) report(c config.Config, field string, warning bool, format string, args ...any) {
	a.out = append(a.out, &config.Error{Key: c.Key(), Field: field, Warning: warning, Message: fmt.Sprintf(format, args...)})
}

// gatewayProxy is a gateway proxy analysis assumes: one per distinct set
// of Gateways (gatewayGroups), carrying exactly their selector labels.
type gatewayProxy struct {
	// gateways are the Gateways ("namespace/name") that serve it.
	gateways []string
	labels   map[string]string
	// namespace is the proxy's namespace: that of its Gateway API
	// Gateway; "" for an Istio Gateway, whose proxies may run in any
	// namespace.
	namespace string
}

func gatewayProxies(push *model.PushContext) []gatewayProxy {
	var out []gatewayProxy
	seen := map[string]bool{}
	for _, g := range gatewayGroups(push) {
		p := gatewayProxy{labels: g.labels}
		if _, ok := g.labels[policyattach.GatewayNameLabel]; ok {
			p.namespace = g.namespace
		}
		for _, gw := range g.gateways {
			p.gateways = append(p.gateways, gw.Namespace+"/"+gw.Name)
		}
		if k := strings.Join(p.gateways, ",") + "|" + p.namespace; !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// applies reports whether a policy of namespace ns attaches to p at
// gateway level, as istiod's selection for authn and authz does: a policy
// of the root namespace applies to proxies of every namespace, any other
// only to proxies of its own; then policyattach.Selects. A proxy of
// unknown namespace is taken to be in the policy's.
func (a *securityAnalysis) applies(ns string, spec policyattach.Targetable, p gatewayProxy) bool {
	proxyNS := p.namespace
	if proxyNS == "" {
		proxyNS = ns
	}
	if ns != proxyNS && ns != a.root {
		return false
	}
	return policyattach.Selects(policyattach.Proxy{Namespace: proxyNS, Labels: p.labels}, ns, spec)
}

// policyScope is where an AuthorizationPolicy applies: gateway proxies
// as a whole, and served routes it targets.
type policyScope struct {
	proxies []gatewayProxy
	routes  []*servedRoute
}

func (s policyScope) empty() bool { return len(s.proxies) == 0 && len(s.routes) == 0 }

// gateways are the Gateways ("namespace/name") of the scope, sorted.
func (s policyScope) gateways() []string {
	var out []string
	for _, p := range s.proxies {
		out = append(out, p.gateways...)
	}
	for _, r := range s.routes {
		out = append(out, r.gateways...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// routesName says whose routes a scope's are: "on gateway ns/a", or "of
// VirtualService ns/shop" for a policy that targets routes only.
func (s policyScope) routesName() string {
	if len(s.proxies) > 0 {
		return "on " + gatewayList(s.gateways())
	}
	var refs []string
	for _, r := range s.routes {
		refs = append(refs, r.ref.String())
	}
	return "of " + strings.Join(refs, ", ")
}

// scopeOf returns where a policy of namespace ns applies.
func (a *securityAnalysis) scopeOf(ns string, spec policyattach.Targetable) policyScope {
	var s policyScope
	for _, p := range a.proxies {
		if a.applies(ns, spec, p) {
			s.proxies = append(s.proxies, p)
		}
	}
	s.routes = a.targetedRoutes(ns, spec)
	return s
}

// targetedRoutes are the served routes a policy of namespace ns targets.
func (a *securityAnalysis) targetedRoutes(ns string, spec policyattach.Targetable) []*servedRoute {
	var out []*servedRoute
	for _, ref := range policyattach.TargetRefs(spec) {
		r, ok := routeRefOf(ref)
		if !ok || (r.namespace != "" && r.namespace != ns) {
			continue
		}
		if s := a.routes.served(r.inNamespace(ns)); s != nil && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// customProvider reports a CUSTOM policy whose provider is not an
// ext_authz provider of the mesh config: istiod then turns its rules into
// an enforcing DENY (...-deny-due-to-bad-CUSTOM-action), so the gateway
// denies every request the policy matches.
func (a *securityAnalysis) customProvider(c config.Config, spec *securityv1beta1.AuthorizationPolicy) {
	if spec.GetAction() != securityv1beta1.AuthorizationPolicy_CUSTOM {
		return
	}
	name := spec.GetProvider().GetName()
	const consequence = "the gateway denies every request this policy matches, as istiod serves a CUSTOM policy whose provider it cannot build"
	p, err := a.push.Mesh().Provider(name)
	switch {
	case err != nil:
		a.report(c, "spec.provider.name", false, "%v: %s", err, consequence)
	case p.GetEnvoyExtAuthzHttp() == nil && p.GetEnvoyExtAuthzGrpc() == nil:
		a.report(c, "spec.provider.name", false, "extension provider %q is a %s provider, not envoyExtAuthzHttp or envoyExtAuthzGrpc: %s",
			name, providerKind(p), consequence)
	}
}

// providerKind is the name of the provider's kind ("zipkin").
func providerKind(p *meshconfig.MeshConfig_ExtensionProvider) string {
	m := p.ProtoReflect()
	if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("provider")); fd != nil {
		return fd.JSONName()
	}
	return "empty"
}

// ipBlocks warns about ipBlocks, notIpBlocks and source.ip where the
// gateway's clients arrive through a load balancer. Envoy's
// direct_remote_ip, which istiod makes of them, is always the TCP peer;
// remote_ip (remoteIpBlocks, remote.ip) is the client address Envoy takes
// from X-Forwarded-For (xff_num_trusted_hops) or the PROXY header. With
// neither, the two are the same address and nothing is reported.
func (a *securityAnalysis) ipBlocks(c config.Config, spec *securityv1beta1.AuthorizationPolicy, topo model.GatewayTopology) {
	var why, client string
	switch {
	case topo.NumTrustedProxies > 0:
		why = fmt.Sprintf("the mesh config's defaultConfig.gatewayTopology.numTrustedProxies is %d: clients reach the gateway through "+
			"a load balancer or proxy, so the peer is that load balancer, never the client", topo.NumTrustedProxies)
		client = "the client address Envoy takes from X-Forwarded-For"
	case topo.ProxyProtocol:
		why = "the mesh config's defaultConfig.gatewayTopology.proxyProtocol is set: clients reach the gateway through a load balancer " +
			"that sends their address in a PROXY header, so the peer is the load balancer, never the client"
		client = "the client address of the PROXY header"
	default:
		return
	}
	for i, r := range spec.GetRules() {
		for j, f := range r.GetFrom() {
			s := f.GetSource()
			for _, v := range []struct {
				field, remote string
				set           bool
			}{
				{"ipBlocks", "remoteIpBlocks", len(s.GetIpBlocks()) > 0},
				{"notIpBlocks", "notRemoteIpBlocks", len(s.GetNotIpBlocks()) > 0},
			} {
				if v.set {
					a.report(c, fmt.Sprintf("spec.rules[%d].from[%d].source.%s", i, j, v.field), true,
						"%s matches the address of the direct peer, and %s: %s (%s) was probably meant", v.field, why, v.remote, client)
				}
			}
		}
		for j, w := range r.GetWhen() {
			if w.GetKey() == "source.ip" {
				a.report(c, fmt.Sprintf("spec.rules[%d].when[%d].key", i, j), true,
					"source.ip is the address of the direct peer, and %s: remote.ip (%s) was probably meant", why, client)
			}
		}
	}
}

// principals warns about requestPrincipals, notRequestPrincipals and
// request.auth.* conditions where no RequestAuthentication applies: no
// request carries a principal or claims there (Envoy's jwt_authn writes
// none), so the positive forms never match and the negative ones always
// do.
func (a *securityAnalysis) principals(c config.Config, spec *securityv1beta1.AuthorizationPolicy, scope policyScope) {
	if a.authnApplies(c.Namespace, scope) {
		return
	}
	where := fmt.Sprintf("no RequestAuthentication applies to %s, so no request there carries a principal or claims", gatewayList(scope.gateways()))
	action := spec.GetAction()
	for i, r := range spec.GetRules() {
		for j, f := range r.GetFrom() {
			s := f.GetSource()
			field := fmt.Sprintf("spec.rules[%d].from[%d].source.", i, j)
			switch {
			case len(s.GetRequestPrincipals()) > 0:
				a.report(c, field+"requestPrincipals", true, "%s: requestPrincipals never matches, so with action %s this source %s",
					where, action, neverMatches(action))
			case len(s.GetNotRequestPrincipals()) > 0:
				a.report(c, field+"notRequestPrincipals", true, "%s: notRequestPrincipals matches every request, so with action %s this source %s",
					where, action, alwaysMatches(action))
			}
		}
		for j, w := range r.GetWhen() {
			if !strings.HasPrefix(w.GetKey(), "request.auth.") {
				continue
			}
			field := fmt.Sprintf("spec.rules[%d].when[%d].key", i, j)
			if len(w.GetValues()) > 0 {
				a.report(c, field, true, "%s: %s is never set and the condition never holds, so with action %s the rule %s",
					where, w.GetKey(), action, neverMatches(action))
			} else {
				a.report(c, field, true, "%s: %s is never set and its notValues always hold, so with action %s the rule %s",
					where, w.GetKey(), action, alwaysMatches(action))
			}
		}
	}
}

// neverMatches is what a source or rule that never matches does.
func neverMatches(action securityv1beta1.AuthorizationPolicy_Action) string {
	switch action {
	case securityv1beta1.AuthorizationPolicy_DENY:
		return "never denies"
	case securityv1beta1.AuthorizationPolicy_AUDIT:
		return "never audits"
	case securityv1beta1.AuthorizationPolicy_CUSTOM:
		return "never sends a request to the provider"
	default:
		return "allows nothing"
	}
}

// alwaysMatches is what a source or rule does whose principal condition
// matches every request.
func alwaysMatches(action securityv1beta1.AuthorizationPolicy_Action) string {
	switch action {
	case securityv1beta1.AuthorizationPolicy_DENY:
		return "denies every request the rest of the rule matches, tokens or not"
	case securityv1beta1.AuthorizationPolicy_AUDIT:
		return "audits every request the rest of the rule matches"
	case securityv1beta1.AuthorizationPolicy_CUSTOM:
		return "sends every request the rest of the rule matches to the provider"
	default:
		return "allows requests whatever token they carry"
	}
}

// authnApplies reports whether some RequestAuthentication may apply
// where an AuthorizationPolicy of namespace ns applies (scope): to one of
// its proxies, to a route those proxies serve, to a route it targets or
// to a proxy serving that route. Unsure means yes.
func (a *securityAnalysis) authnApplies(ns string, scope policyScope) bool {
	for _, ra := range a.authns {
		targeted := a.targetedRoutes(ra.c.Namespace, ra.spec)
		for _, p := range scope.proxies {
			// An Istio Gateway's proxy is in the policy's namespace,
			// unless the policy is of the root namespace (then it may be
			// in any).
			if p.namespace == "" && ns != a.root {
				p.namespace = ns
			}
			if a.applies(ra.c.Namespace, ra.spec, p) || servesAny(p.gateways, targeted) {
				return true
			}
		}
		for _, r := range scope.routes {
			if slices.Contains(targeted, r) {
				return true
			}
			for _, p := range a.proxies {
				if sharesGateway(p.gateways, r.gateways) && a.applies(ra.c.Namespace, ra.spec, p) {
					return true
				}
			}
		}
	}
	return false
}

// servesAny reports whether one of the Gateways serves one of routes.
func servesAny(gateways []string, routes []*servedRoute) bool {
	for _, r := range routes {
		if sharesGateway(gateways, r.gateways) {
			return true
		}
	}
	return false
}

func sharesGateway(a, b []string) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

// paths warns about a `to.operation.paths` entry that no route of the
// scope serves for the operation's hosts: only when every route
// concerned has URI conditions that cannot match the path (a route
// without match, a match without uri, a delegate or a regex the path is
// not checked against all count as serving it), and some route is
// concerned at all.
func (a *securityAnalysis) paths(c config.Config, spec *securityv1beta1.AuthorizationPolicy, scope policyScope) {
	var all []hostRoutes
	for _, p := range scope.proxies {
		for _, gw := range p.gateways {
			for _, r := range a.routes.byGateway[gw] {
				all = append(all, r.routes...)
			}
		}
	}
	for _, r := range scope.routes {
		all = append(all, r.routes...)
	}
	for i, r := range spec.GetRules() {
		for j, to := range r.GetTo() {
			op := to.GetOperation()
			var uris []routeURI
			for _, hr := range all {
				if !anyHostOverlaps(op.GetHosts(), hr.hosts) {
					continue
				}
				for _, h := range hr.http {
					uris = append(uris, routeURIs(h)...)
				}
			}
			if len(uris) == 0 {
				continue
			}
			for k, path := range op.GetPaths() {
				pp := parsePolicyPath(path)
				if slices.ContainsFunc(uris, func(u routeURI) bool { return pathOverlaps(pp, u) }) {
					continue
				}
				hosts := "any host"
				if len(op.GetHosts()) > 0 {
					hosts = "hosts " + strings.Join(op.GetHosts(), ", ")
				}
				a.report(c, fmt.Sprintf("spec.rules[%d].to[%d].operation.paths[%d]", i, j, k), true,
					"no route %s serves %s for %s (they match %s): the rule never matches a request that reaches a backend%s",
					scope.routesName(), path, hosts, uriList(uris), exactHint(pp, uris))
			}
		}
	}
}

// anyHostOverlaps reports whether a request could match one of policy
// hosts (none: every host) and be served for one of route hosts.
func anyHostOverlaps(policy, route []string) bool {
	if len(policy) == 0 {
		return true
	}
	for _, p := range policy {
		for _, r := range route {
			if hostsOverlap(p, r) {
				return true
			}
		}
	}
	return false
}

// exactHint suggests a prefix when an exact path is the start of a
// served one: "/api" where routes serve "/api/".
func exactHint(p policyPath, uris []routeURI) string {
	if p.kind != pathExact {
		return ""
	}
	dir := strings.TrimSuffix(p.value, "/") + "/"
	for _, u := range uris {
		if (u.kind == "prefix" || u.kind == "exact") && strings.HasPrefix(u.value, dir) {
			return fmt.Sprintf("; a path matches exactly unless it ends in \"*\" (%s* matches the paths under it)", dir)
		}
	}
	return ""
}

// uriList writes the distinct URI conditions, at most five.
func uriList(uris []routeURI) string {
	var parts []string
	for _, u := range uris {
		if s := u.String(); !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	slices.Sort(parts)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("%d more", len(parts)-5))
	}
	return strings.Join(parts, ", ")
}

// gatewayList names Gateways for a message: "gateway ns/a", "gateways
// ns/a, ns/b", at most three.
func gatewayList(gws []string) string {
	if len(gws) == 1 {
		return "gateway " + gws[0]
	}
	if len(gws) > 3 {
		gws = append(slices.Clone(gws[:3]), fmt.Sprintf("%d more", len(gws)-3))
	}
	return "gateways " + strings.Join(gws, ", ")
}
