package gatewayapi

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// sortedRoute is one Istio route with its Gateway API precedence.
type sortedRoute struct {
	key   precedence
	route *networking.HTTPRoute
	// session is the route's session persistence (session.go), carried
	// on its VirtualService as model.GatewayAPISessionsAnnotation.
	session *model.GatewayAPISession
}

// hostKey is one hostname of one listener: one VirtualService.
type hostKey struct {
	istioGateway string // "namespace/name"
	host         string
}

type hostRoutes struct {
	listener *listener
	routes   []*sortedRoute
}

func (c *converter) addRoutes(l *listener, host string, routes []*sortedRoute) {
	if len(routes) == 0 {
		return // a route whose every match was refused: no VirtualService
	}
	k := hostKey{istioGateway: l.istioKey, host: host}
	e, ok := c.hosts[k]
	if !ok {
		e = &hostRoutes{listener: l}
		c.hosts[k] = e
	}
	e.routes = append(e.routes, routes...)
}

// virtualServices builds one VirtualService per listener and hostname, its
// routes sorted by the Gateway API's precedence.
func (c *converter) virtualServices() []config.Config {
	keys := slices.SortedFunc(maps.Keys(c.hosts), func(a, b hostKey) int {
		if a.istioGateway != b.istioGateway {
			return strings.Compare(a.istioGateway, b.istioGateway)
		}
		return strings.Compare(a.host, b.host)
	})
	// Wildcard hostnames by listener, for hostRoutes.
	wildcards := map[string][]string{}
	for _, k := range keys {
		if strings.HasPrefix(k.host, "*") {
			wildcards[k.istioGateway] = append(wildcards[k.istioGateway], k.host)
		}
	}
	var out []config.Config
	names := map[string]bool{}
	for _, k := range keys {
		e := c.hosts[k]
		vs := &networking.VirtualService{Hosts: []string{k.host}, Gateways: []string{k.istioGateway}}
		sorted := c.hostRoutes(k, wildcards[k.istioGateway])
		for _, r := range sorted {
			vs.Http = append(vs.Http, proto.Clone(r.route).(*networking.HTTPRoute))
		}
		g := e.listener.gateway
		name := generatedName(e.listener.nameBase() + "-" + hostLabel(k.host) + "-" + NameSuffix)
		if names[g.Namespace+"/"+name] {
			// "a-b.com" and "a.b.com" read the same once dots are dashes.
			sum := sha256.Sum256([]byte(k.host))
			name += "-" + hex.EncodeToString(sum[:4])
		}
		names[g.Namespace+"/"+name] = true
		annotations := map[string]string{model.GatewayAPIRoutesAnnotation: "true"}
		if s := sessionsAnnotation(sorted); s != "" {
			annotations[model.GatewayAPISessionsAnnotation] = s
		}
		out = append(out, config.Config{
			Meta: config.Meta{Kind: schema.VirtualService, Namespace: g.Namespace, Name: name,
				// Its routes' statistics are named after the Gateway API
				// routes they came from (route names), not after it.
				Annotations:       annotations,
				CreationTimestamp: g.CreationTimestamp.Time, Source: Source("Gateway", g)},
			Spec: vs,
		})
	}
	return out
}

// hostLabel makes a host usable in a name: dots become dashes, the
// wildcard "wildcard".
func hostLabel(host string) string {
	return strings.ReplaceAll(strings.ReplaceAll(host, "*", "wildcard"), ".", "-")
}

func cloneRoute(r *networking.HTTPRoute) *networking.HTTPRoute {
	return proto.Clone(r).(*networking.HTTPRoute)
}

func cloneMatch(m *networking.HTTPMatchRequest) *networking.HTTPMatchRequest {
	return proto.Clone(m).(*networking.HTTPMatchRequest)
}

// hostRoutes returns the routes a request for k.host meets, in order. Envoy
// picks one virtual host per request, but the Gateway API matches across
// every route whose hostname covers the request's: a route for
// "*.example.com" still serves "shop.example.com" where the shop's own
// routes do not match. So the routes of every wildcard host of the same
// listener that covers k.host follow k.host's own, and the more specific
// hostname ranks first: an exact name, then the longer wildcard, "*" last.
// Within one hostname the precedence of the package doc applies. A route
// naming several of these hostnames appears once, at its most specific.
func (c *converter) hostRoutes(k hostKey, wildcards []string) []*sortedRoute {
	type ranked struct {
		host  hostRank
		route *sortedRoute
	}
	var all []ranked
	seen := map[*sortedRoute]bool{}
	add := func(host string) {
		for _, r := range c.hosts[hostKey{istioGateway: k.istioGateway, host: host}].routes {
			if !seen[r] {
				seen[r] = true
				all = append(all, ranked{host: rankHost(host), route: r})
			}
		}
	}
	add(k.host)
	for _, w := range wildcards {
		if w != k.host && covers(w, k.host) {
			add(w)
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int {
		if c := a.host.compare(b.host); c != 0 {
			return c
		}
		return a.route.key.compare(b.route.key)
	})
	out := make([]*sortedRoute, len(all))
	for i, r := range all {
		out[i] = r.route
	}
	return out
}

// hostRank is how specific a matching hostname is.
type hostRank struct {
	exact  bool
	length int
}

func rankHost(h string) hostRank { return hostRank{exact: !strings.HasPrefix(h, "*"), length: len(h)} }

func (a hostRank) compare(b hostRank) int {
	if a.exact != b.exact {
		if a.exact {
			return -1
		}
		return 1
	}
	return b.length - a.length
}

// covers reports whether wildcard hostname pattern matches every request
// for host ("*" covers all; "*.example.com" covers "a.example.com" and
// "*.a.example.com").
func covers(pattern, host string) bool {
	return pattern == "*" || wildcardMatches(pattern, host)
}
