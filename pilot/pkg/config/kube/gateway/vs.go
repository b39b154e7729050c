package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// sortedRoute is one Istio route with its Gateway API precedence.
type sortedRoute struct {
	key   precedence
	route *networking.HTTPRoute
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
	var out []config.Config
	names := map[string]bool{}
	for _, k := range keys {
		e := c.hosts[k]
		slices.SortStableFunc(e.routes, func(a, b *sortedRoute) int { return a.key.compare(b.key) })
		vs := &networking.VirtualService{Hosts: []string{k.host}, Gateways: []string{k.istioGateway}}
		for _, r := range e.routes {
			vs.Http = append(vs.Http, proto.Clone(r.route).(*networking.HTTPRoute))
		}
		g := e.listener.gateway
		name := g.Name + "-" + string(e.listener.spec.Name) + "-" + hostLabel(k.host) + "-" + NameSuffix
		if names[g.Namespace+"/"+name] {
			// "a-b.com" and "a.b.com" read the same once dots are dashes.
			sum := sha256.Sum256([]byte(k.host))
			name += "-" + hex.EncodeToString(sum[:4])
		}
		names[g.Namespace+"/"+name] = true
		out = append(out, config.Config{
			Meta: config.Meta{Kind: schema.VirtualService, Namespace: g.Namespace, Name: name,
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
