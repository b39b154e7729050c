// Package route translates the VirtualServices bound to a proxy's Gateways
// into Envoy RouteConfigurations, one per HTTP port and one per HTTPS
// server, following Istio's
// gateway semantics: which VirtualService hosts a server exposes, how their
// routes merge and order, and how each HTTP route maps to an Envoy route.
//
// Translation is pure and best effort: a route that cannot be built is
// skipped and reported as a config.Error naming the VirtualService and
// field; everything else is still built.
package route

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// BuildGatewayRoutes builds one RouteConfiguration per HTTP port of mg,
// named model.RouteName(port) ("http.80"), and one per HTTPS server, named
// by the server (model.HTTPSServer.RouteName), as Istio does: each HTTPS
// server has its own filter chain, so it gets only the hosts it binds.
func BuildGatewayRoutes(push *model.PushContext, mg *model.MergedGateway) ([]*routev3.RouteConfiguration, []*config.Error) {
	return BuildGatewayRoutesCached(push, mg, nil)
}

// BuildGatewayRoutesCached is BuildGatewayRoutes taking each
// VirtualService's routes from cache when nothing they depend on changed
// (nil: translate everything).
func BuildGatewayRoutesCached(push *model.PushContext, mg *model.MergedGateway, cache *Cache) ([]*routev3.RouteConfiguration, []*config.Error) {
	r := &reporter{}
	out := make([]*routev3.RouteConfiguration, 0, len(mg.HTTPPorts))
	for _, port := range mg.HTTPPorts {
		out = append(out, buildPort(push, port, model.RouteName(port), mg.HTTPServers[port], cache, r))
	}
	for _, port := range mg.HTTPSPorts {
		for _, s := range mg.HTTPSServers[port] {
			out = append(out, buildPort(push, port, s.RouteName, []model.GatewayServer{s.GatewayServer}, cache, r))
		}
	}
	return out, r.errs
}

// contribution is the routes one VirtualService adds to one virtual host.
type contribution struct {
	vs     *config.Config
	routes []builtRoute
}

// virtualHost gathers what the servers of one port say about one host.
type virtualHost struct {
	host       string
	requireTLS bool
	contribs   []contribution
}

// add merges vs's routes in. The same VirtualService can arrive through
// several Gateways on one port; routes it already gave are not repeated.
func (vh *virtualHost) add(vs *config.Config, routes []builtRoute) {
	for i := range vh.contribs {
		c := &vh.contribs[i]
		if c.vs.Key() != vs.Key() {
			continue
		}
		for _, br := range routes {
			if !slices.ContainsFunc(c.routes, func(o builtRoute) bool { return proto.Equal(o.route, br.route) }) {
				c.routes = append(c.routes, br)
			}
		}
		return
	}
	vh.contribs = append(vh.contribs, contribution{vs: vs, routes: slices.Clone(routes)})
}

// buildPort builds route configuration name for servers on one port.
func buildPort(push *model.PushContext, port uint32, name string, servers []model.GatewayServer, vsCache *Cache, r *reporter) *routev3.RouteConfiguration {
	vhosts := map[string]*virtualHost{}
	get := func(h string) *virtualHost {
		vh, ok := vhosts[h]
		if !ok {
			vh = &virtualHost{host: h}
			vhosts[h] = vh
		}
		return vh
	}
	// A VirtualService's routes depend on the port and gateway only.
	cache := map[string][]builtRoute{}

	for _, s := range servers {
		gwKey := s.Gateway.Namespace + "/" + s.Gateway.Name
		httpsRedirect := s.Server.GetTls().GetHttpsRedirect()
		shosts := make([]serverHost, 0, len(s.Server.GetHosts()))
		for _, h := range s.Server.GetHosts() {
			shosts = append(shosts, parseServerHost(h, s.Gateway.Namespace))
		}
		vss := push.VirtualServicesForGateway(gwKey)
		for i := range vss {
			vs := &vss[i]
			spec, ok := vs.Spec.(*networking.VirtualService)
			if !ok {
				continue
			}
			var allowed []string
			for _, sh := range shosts {
				if sh.host != "" && sh.allows(vs.Namespace) {
					allowed = append(allowed, sh.host)
				}
			}
			vsHosts := make([]string, 0, len(spec.GetHosts()))
			for _, h := range spec.GetHosts() {
				if h = push.ResolveShortname(h, vs.Namespace); h != "" {
					vsHosts = append(vsHosts, h)
				}
			}
			hosts := IntersectHosts(allowed, vsHosts)
			if len(hosts) == 0 {
				continue
			}
			key := vs.Namespace + "/" + vs.Name + "\x00" + gwKey
			routes, ok := cache[key]
			if !ok {
				ctx := routeContext{push: push, vs: vs, port: port, tls: strings.EqualFold(s.Server.GetPort().GetProtocol(), "HTTPS")}
				routes = vsCache.routes(ctx, gwKey, r)
				cache[key] = routes
			}
			if len(routes) == 0 {
				continue
			}
			for _, h := range hosts {
				vh := get(h)
				vh.add(vs, routes)
				vh.requireTLS = vh.requireTLS || httpsRedirect
			}
		}
		// An HTTPS redirect covers the server's hosts even without routes.
		if httpsRedirect {
			for _, sh := range shosts {
				if sh.host != "" {
					get(sh.host).requireTLS = true
				}
			}
		}
	}

	var out []*routev3.VirtualHost
	// Envoy rejects a whole route table in which two virtual hosts share a
	// domain or a name. Hosts are keyed lower-cased, so this cannot happen
	// today; the check keeps a future change from costing every route.
	claimed := newClaims(len(vhosts))
	for _, h := range sortedKeys(vhosts) {
		vh := vsCache.virtualHost(assembleVirtualHost(vhosts[h], port, r))
		if vh == nil {
			continue
		}
		if dup, owner := claimed.duplicate(vh); dup != "" {
			if c := vhosts[h].contribs; len(c) > 0 {
				r.errorf(c[0].vs, "spec.hosts", "host %s on port %d: domain %s is already served by virtual host %s; left out, as Envoy would reject the route table",
					h, port, dup, owner)
			}
			continue
		}
		out = append(out, vh)
	}
	slices.SortFunc(out, func(a, b *routev3.VirtualHost) int { return strings.Compare(a.Name, b.Name) })
	if len(out) == 0 {
		// Istio's placeholder: every request misses all (no) routes and
		// gets Envoy's 404, instead of the listener having no RDS answer.
		out = []*routev3.VirtualHost{{Name: virtualHostName("blackhole", port), Domains: []string{"*"}}}
	}
	return &routev3.RouteConfiguration{
		Name:         name,
		VirtualHosts: out,
		// Clusters come from another resource type and may arrive later;
		// Envoy must not reject routes to ones it does not know yet.
		ValidateClusters: wrapperspb.Bool(false),
		// istiod 1.29's gateway defaults (gateway.go
		// buildGatewayHTTPRouteConfig): hosts match whatever port the Host
		// header carries, and direct responses may be up to 1 MiB.
		IgnorePortInHostMatching:       true,
		MaxDirectResponseBodySizeBytes: wrapperspb.UInt32(MaxDirectResponseBody),
	}
}

// claims are the names and domains of a route table's virtual hosts so
// far, each with the virtual host that holds it.
type claims struct{ names, domains map[string]string }

// newClaims sizes the maps for n virtual hosts (Istio gives each two
// domains), so building them leaves no grown-out tables behind.
func newClaims(n int) claims {
	return claims{names: make(map[string]string, n), domains: make(map[string]string, 2*n)}
}

// duplicate returns a domain (or "name N") of vh that is claimed already,
// with the virtual host that holds it, or else claims them all for vh and
// returns "".
func (c claims) duplicate(vh *routev3.VirtualHost) (dup, owner string) {
	if owner, ok := c.names[vh.GetName()]; ok {
		return "name " + vh.GetName(), owner
	}
	for _, d := range vh.GetDomains() {
		if owner, ok := c.domains[d]; ok {
			return d, owner
		}
	}
	c.names[vh.GetName()] = vh.GetName()
	for _, d := range vh.GetDomains() {
		c.domains[d] = vh.GetName()
	}
	return "", ""
}

// assembleVirtualHost orders one host's routes: VirtualServices oldest
// first, routes as written, and routes matching every request moved last
// so one VirtualService's catch-all does not hide another's specific
// routes. It reports merged hosts and routes that can never match, and
// returns nil for a host left with nothing to do.
func assembleVirtualHost(vh *virtualHost, port uint32, r *reporter) *routev3.VirtualHost {
	slices.SortStableFunc(vh.contribs, func(a, b contribution) int { return compareCreation(a.vs, b.vs) })
	for _, c := range vh.contribs[min(1, len(vh.contribs)):] {
		first := vh.contribs[0].vs
		r.warnf(c.vs, "spec.hosts", "host %s on port %d is also bound by VirtualService %s/%s, which comes first (creation time, then namespace/name); the routes of both are merged into one virtual host",
			vh.host, port, first.Namespace, first.Name)
	}

	var specific, catchAll []builtRoute
	for _, c := range vh.contribs {
		for _, br := range c.routes {
			if isCatchAll(br.route.GetMatch()) {
				catchAll = append(catchAll, br)
			} else {
				specific = append(specific, br)
			}
		}
	}
	ordered := append(specific, catchAll...)
	reportShadowed(ordered, vh.host, port, r)

	if len(ordered) == 0 && !vh.requireTLS {
		return nil
	}
	out := &routev3.VirtualHost{
		Name:    virtualHostName(vh.host, port),
		Domains: virtualHostDomains(vh.host),
		// Lets upstreams see retries (x-envoy-attempt-count), as Istio does.
		IncludeRequestAttemptCount: true,
	}
	if vh.requireTLS {
		out.RequireTls = routev3.VirtualHost_ALL
	}
	for _, br := range ordered {
		// Routes are shared by the virtual hosts of one VirtualService's
		// hosts: translation output is never edited, only marshaled.
		// (Copying them was a quarter of a gateway's translation.)
		out.Routes = append(out.Routes, br.route)
	}
	return out
}

// reportShadowed warns about routes an earlier route in the same virtual
// host always wins over: one after a catch-all, or one whose match
// repeats an earlier match exactly.
func reportShadowed(routes []builtRoute, host string, port uint32, r *reporter) {
	seen := map[string]builtRoute{}
	var catchAll *builtRoute
	for i, br := range routes {
		if catchAll != nil {
			r.warnf(br.vs, br.field, "never matches for host %s on port %d: %s matches every request first",
				host, port, describe(*catchAll, br.vs))
			continue
		}
		key := matchKey(br.route.GetMatch())
		if prev, ok := seen[key]; ok {
			r.warnf(br.vs, br.field, "never matches for host %s on port %d: %s has the same match conditions and comes first",
				host, port, describe(prev, br.vs))
			continue
		}
		seen[key] = br
		if isCatchAll(br.route.GetMatch()) {
			catchAll = &routes[i]
		}
	}
}

// describe names a route for a message about another route of self.
func describe(br builtRoute, self *config.Config) string {
	if br.vs.Key() == self.Key() {
		return br.field
	}
	return fmt.Sprintf("VirtualService %s/%s %s", br.vs.Namespace, br.vs.Name, br.field)
}

func matchKey(m *routev3.RouteMatch) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	return string(b)
}

// compareCreation is the push context's VirtualService order: oldest first,
// then namespace and name.
func compareCreation(a, b *config.Config) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}
