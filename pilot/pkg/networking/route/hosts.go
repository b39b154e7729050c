package route

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// serverHost is one entry of a Gateway server's hosts: "ns/host",
// "./host", "*/host" or "host".
type serverHost struct {
	namespace string // "*" when any namespace may bind
	host      string
}

// parseServerHost splits a server host, resolving "." to the Gateway's
// namespace.
func parseServerHost(h, gatewayNamespace string) serverHost {
	ns, host, ok := strings.Cut(h, "/")
	if !ok {
		return serverHost{namespace: "*", host: strings.ToLower(h)}
	}
	if ns == "." {
		ns = gatewayNamespace
	}
	return serverHost{namespace: ns, host: strings.ToLower(host)}
}

// allows reports whether a VirtualService in namespace may bind to this host.
func (s serverHost) allows(namespace string) bool {
	return s.namespace == "*" || s.namespace == namespace
}

// isWildcard reports whether h is "*" or "*.suffix".
func isWildcard(h string) bool { return strings.HasPrefix(h, "*") }

// hostSubsetOf reports whether every name h stands for is also covered by
// of: "a.example.com" and "*.a.example.com" are subsets of "*.example.com",
// everything is a subset of "*", and a plain name only of itself.
func hostSubsetOf(h, of string) bool {
	if isWildcard(h) {
		return isWildcard(of) && strings.HasSuffix(h[1:], of[1:])
	}
	if isWildcard(of) {
		return strings.HasSuffix(h, of[1:])
	}
	return h == of
}

// IntersectHosts returns the names both sets cover, each as the more
// specific of the two patterns that matched, sorted and without duplicates.
// Server "*.example.com" and VirtualService "foo.example.com" give
// "foo.example.com"; so do server "foo.example.com" and VirtualService "*".
func IntersectHosts(server, vs []string) []string {
	var out []string
	for _, s := range server {
		for _, v := range vs {
			switch {
			case hostSubsetOf(s, v):
				out = append(out, s)
			case hostSubsetOf(v, s):
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// virtualHostName is Istio's virtual host name, "host:port".
func virtualHostName(host string, port uint32) string {
	return host + ":" + strconv.FormatUint(uint64(port), 10)
}

// virtualHostDomains lists the Host header values a virtual host answers.
// As istiod 1.29 does for gateways (gateway.go buildGatewayHTTPRouteConfig),
// that is the host alone: the route configuration sets
// ignore_port_in_host_matching, so Envoy drops any port from the Host header
// before matching and "foo.com:8080" and "*.foo.com:31380" match too, for
// every host and wildcard alike. An IPv6 literal also gets its bracketed
// form, which is what is left of "[::1]:80" once the port is dropped.
func virtualHostDomains(host string) []string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return []string{host, "[" + host + "]"}
	}
	return []string{host}
}
