package listener

import (
	"fmt"
	"slices"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// passthroughChains are the filter chains of a PASSTHROUGH server, built as
// istiod builds them: for every VirtualService bound to the server's
// Gateway that exposes one of its hosts (oldest first), every tls route
// with destinations, and every match entry of it that fits the server's
// port and Gateway, one chain matching the entry's sniHosts and proxying
// the still-encrypted connection to the route's destinations. An entry
// whose names another chain of the listener has already is skipped and
// reported (Envoy would reject the listener), and so is a server host no
// chain serves: its connections find no chain and are closed.
//
// serverNames are the server's SNI names (nil: any). Unlike istiod, an
// entry's sniHosts are narrowed to the names the server exposes, so a
// route cannot open the port to names the Gateway does not list.
func passthroughChains(c l4Context, serverNames []string, claims sniClaims) []*listenerv3.FilterChain {
	var out []*listenerv3.FilterChain
	var served []string
	for _, vs := range c.boundVirtualServices() {
		for i, tr := range vs.Spec.(*networking.VirtualService).GetTls() {
			if len(tr.GetRoute()) == 0 {
				continue
			}
			for j, m := range tr.GetMatch() {
				if !c.l4Matches(vs, m.GetPort(), m.GetGateways()) {
					continue
				}
				field := fmt.Sprintf("spec.tls[%d].match[%d].sniHosts", i, j)
				names, ok := narrowSNI(lowerAll(m.GetSniHosts()), serverNames)
				if !ok {
					c.errs.add(&config.Error{Source: vs.Source, Key: vs.Key(), Field: field, Warning: true,
						Message: fmt.Sprintf("none of these SNI hosts is a host of server %s %s; match not used there", c.server.Gateway, c.server.Field(""))})
					continue
				}
				owner := fmt.Sprintf("VirtualService %s/%s %s", vs.Namespace, vs.Name, field)
				if name, prev, taken := claims.conflict(names); taken {
					if name == "" {
						name = "*"
					}
					c.errs.add(&config.Error{Source: vs.Source, Key: vs.Key(), Field: field,
						Message: fmt.Sprintf("SNI host %s on port %d is already matched by %s; match skipped", name, c.server.Server.GetPort().GetNumber(), prev)})
					continue
				}
				proxy, ok := c.tcpProxy(vs, tr.GetRoute(), fmt.Sprintf("spec.tls[%d]", i))
				if !ok {
					continue
				}
				claims.claim(names, owner)
				fc := &listenerv3.FilterChain{Filters: c.networkFilters(proxy)}
				if len(names) > 0 {
					fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: names}
				}
				out = append(out, fc)
				if len(names) == 0 {
					names = []string{"*"}
				}
				served = append(served, names...)
			}
		}
	}
	hosts := serverNames
	if hosts == nil {
		hosts = []string{"*"}
	}
	for _, h := range hosts {
		if !slices.ContainsFunc(served, func(n string) bool { return hostsMatch(h, n) }) {
			c.errs.add(&config.Error{Source: c.server.Source, Key: c.server.Gateway, Field: c.server.Field("hosts"), Warning: true,
				Message: fmt.Sprintf("host %s of this PASSTHROUGH server has no tls route (VirtualService tls match with sniHosts) on port %d; connections for it find no filter chain and are closed",
					h, c.server.Server.GetPort().GetNumber())})
		}
	}
	return out
}

// narrowSNI keeps of sni the names the server exposes, each as the more
// specific of the two patterns, sorted. A result of nil with ok set means
// any name ("*" on both sides). ok is false when nothing is left.
func narrowSNI(sni, serverNames []string) ([]string, bool) {
	if slices.Contains(sni, "*") && serverNames == nil {
		return nil, true
	}
	if serverNames == nil {
		out := slices.Clone(sni)
		slices.Sort(out)
		return slices.Compact(out), len(out) > 0
	}
	out := route.IntersectHosts(sni, serverNames)
	return out, len(out) > 0
}
