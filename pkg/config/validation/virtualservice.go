package validation

import (
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// vsContext is what route checks need to know about their VirtualService.
type vsContext struct {
	// delegate: the VirtualService has no hosts and is meant to be
	// delegated to from another one's http route.
	delegate bool
	// gateway: bound only to gateways (not to the "mesh" sidecars).
	gateway bool
	hosts   []string
}

func (v *validator) virtualService(vs *networking.VirtualService) {
	ctx := vsContext{
		delegate: len(vs.Hosts) == 0,
		gateway:  len(vs.Gateways) > 0 && !slices.Contains(vs.Gateways, "mesh"),
		hosts:    vs.Hosts,
	}
	if ctx.delegate {
		// A delegate is only reachable through its root, which supplies the
		// hosts and gateways; TCP and TLS routes cannot be delegated.
		if len(vs.Gateways) > 0 {
			v.add("spec.hosts", "at least one host is required (a VirtualService without hosts is a delegate, and a delegate cannot set gateways)")
		}
		if len(vs.Tcp) > 0 {
			v.add("spec.tcp", "a delegate VirtualService (one without hosts) cannot have tcp routes")
		}
		if len(vs.Tls) > 0 {
			v.add("spec.tls", "a delegate VirtualService (one without hosts) cannot have tls routes")
		}
	}
	v.vsHosts(vs.Hosts, ctx)
	v.gatewayNames("spec.gateways", vs.Gateways)
	v.exportTo("spec.exportTo", vs.ExportTo, false)

	if len(vs.Http) == 0 && len(vs.Tcp) == 0 && len(vs.Tls) == 0 {
		v.add("spec.http", "at least one http, tcp or tls route is required")
	}
	routeNames := map[string]int{}
	for i, r := range vs.Http {
		f := at("spec.http", i)
		if r == nil {
			v.add(f, "http route must not be null")
			continue
		}
		v.httpRoute(f, r, ctx)
		// Route names name Envoy routes and appear in stats; a duplicate is
		// almost always a copy-paste mistake.
		if r.Name != "" {
			if j, dup := routeNames[r.Name]; dup {
				v.add(f+".name", "duplicate route name %q: already used by spec.http[%d]", r.Name, j)
			} else {
				routeNames[r.Name] = i
			}
		}
	}
	for i, r := range vs.Tls {
		v.tlsRoute(at("spec.tls", i), r, ctx)
	}
	for i, r := range vs.Tcp {
		v.tcpRoute(at("spec.tcp", i), r)
	}
}

// vsHosts checks each host (a short name, an FQDN, a wildcard or an IP)
// and that no two hosts overlap: Envoy cannot have one domain in two
// virtual hosts of a route configuration.
func (v *validator) vsHosts(hosts []string, ctx vsContext) {
	valid := make([]bool, len(hosts))
	for i, h := range hosts {
		f := at("spec.hosts", i)
		switch {
		case h == "*" && !ctx.gateway:
			v.add(f, `host "*" is only allowed when the VirtualService is bound to gateways (not "mesh")`)
		case isIP(h):
			valid[i] = true
		case strings.Contains(h, "/"):
			v.add(f, "host %q: VirtualService hosts cannot name a namespace", h)
		default:
			if err := validateWildcardDomain(h); err != nil {
				v.addErr(f, err)
			} else {
				valid[i] = true
			}
		}
	}
	lower := make([]string, len(hosts))
	for i, h := range hosts {
		lower[i] = strings.ToLower(h)
	}
	for j := range hosts {
		for i := 0; i < j; i++ {
			if valid[i] && valid[j] && hostsOverlap(lower[i], lower[j]) {
				v.add(at("spec.hosts", j), "host %q duplicates or overlaps spec.hosts[%d] %q", hosts[j], i, hosts[i])
				break
			}
		}
	}
}

// hostsOverlap reports whether some name matches both a and b, given in
// lower case.
func hostsOverlap(a, b string) bool {
	return a == b || wildcardCovers(a, b) || wildcardCovers(b, a)
}

// wildcardCovers reports whether wildcard host w matches every name h
// matches: "*" covers all, "*.example.com" covers "a.example.com" and
// "*.a.example.com".
func wildcardCovers(w, h string) bool {
	if w == "*" {
		return true
	}
	suffix, ok := strings.CutPrefix(w, "*")
	return ok && strings.HasSuffix(h, suffix)
}

func (v *validator) tlsRoute(f string, r *networking.TLSRoute, ctx vsContext) {
	if r == nil {
		v.add(f, "tls route must not be null")
		return
	}
	if len(r.Match) == 0 {
		v.add(f+".match", "at least one match is required on a tls route")
	}
	for i, m := range r.Match {
		mf := at(f+".match", i)
		if m == nil {
			v.add(mf, "match must not be null")
			continue
		}
		if len(m.SniHosts) == 0 {
			v.add(mf+".sniHosts", "at least one SNI host is required")
		}
		for j, sni := range m.SniHosts {
			v.sniHost(at(mf+".sniHosts", j), sni, ctx)
		}
		v.l4Match(mf, m.DestinationSubnets, m.Port, m.SourceLabels, m.Gateways, m.SourceNamespace)
	}
	v.routeDestinations(f+".route", r.Route)
}

// sniHost checks an SNI host: a valid domain that one of the
// VirtualService's hosts covers, or it could never be matched.
func (v *validator) sniHost(f, sni string, ctx vsContext) {
	if isIP(sni) {
		// Against the SNI spec but harmless; Istio accepts it too.
		return
	}
	if err := validateWildcardDomain(sni); err != nil {
		v.addErr(f, err)
		return
	}
	for _, h := range ctx.hosts {
		s, hl := strings.ToLower(sni), strings.ToLower(h)
		if s == hl || wildcardCovers(hl, s) {
			return
		}
	}
	v.add(f, "SNI host %q is not covered by any of the VirtualService's hosts [%s]", sni, strings.Join(ctx.hosts, ", "))
}

func (v *validator) tcpRoute(f string, r *networking.TCPRoute) {
	if r == nil {
		v.add(f, "tcp route must not be null")
		return
	}
	for i, m := range r.Match {
		mf := at(f+".match", i)
		if m == nil {
			v.add(mf, "match must not be null")
			continue
		}
		v.l4Match(mf, m.DestinationSubnets, m.Port, m.SourceLabels, m.Gateways, m.SourceNamespace)
	}
	v.routeDestinations(f+".route", r.Route)
}

// l4Match checks the fields TCP and TLS matches share.
func (v *validator) l4Match(f string, subnets []string, port uint32, sourceLabels map[string]string, gateways []string, sourceNamespace string) {
	for i, s := range subnets {
		if err := validateIPOrCIDR(s); err != nil {
			v.addErr(at(f+".destinationSubnets", i), err)
		}
	}
	if port != 0 {
		v.checkPort(f+".port", port)
	}
	v.labels(f+".sourceLabels", sourceLabels)
	v.gatewayNames(f+".gateways", gateways)
	if sourceNamespace != "" && !isDNS1123Label(sourceNamespace) {
		v.add(f+".sourceNamespace", "%q is not a namespace name", sourceNamespace)
	}
}

// routeDestinations checks the destinations of a TCP or TLS route.
func (v *validator) routeDestinations(f string, route []*networking.RouteDestination) {
	if len(route) == 0 {
		v.add(f, "at least one route destination is required")
		return
	}
	weights := make([]int32, len(route))
	for i, rd := range route {
		df := at(f, i)
		if rd == nil {
			v.add(df, "route destination must not be null")
			continue
		}
		v.destination(df+".destination", rd.Destination)
		weights[i] = rd.Weight
	}
	v.weights(f, weights)
}

// weights checks each destination's weight is 0-100 and, when there is
// more than one destination, that some traffic goes somewhere. As in Istio,
// weights are relative: Envoy splits by each weight's share of the total,
// so 1 and 1 is an even split and a total other than 100 is not an error.
// A single destination takes all traffic, so its weight may be left out.
func (v *validator) weights(f string, weights []int32) {
	var sum int64
	inRange := true
	for i, w := range weights {
		if w < 0 || w > 100 {
			v.add(at(f, i)+".weight", "weight %d must be in the range 0-100", w)
			inRange = false
		}
		sum += int64(w)
	}
	if inRange && len(weights) > 1 && sum == 0 {
		v.add(f, "destination weights add up to 0; with more than one destination at least one needs a positive weight")
	}
}

// destination checks a service reference: host, subset and port.
func (v *validator) destination(f string, d *networking.Destination) {
	if d == nil {
		v.add(f, "destination is required")
		return
	}
	switch {
	case d.Host == "":
		v.add(f+".host", "host is required")
	case d.Host == "*":
		v.add(f+".host", `host "*" is not a destination`)
	default:
		if err := validateWildcardDomain(d.Host); err != nil {
			v.addErr(f+".host", err)
		}
	}
	if d.Subset != "" && !isDNS1123Label(d.Subset) {
		v.add(f+".subset", "subset %q is not a DNS-1123 label", d.Subset)
	}
	if d.Port != nil {
		v.checkPort(f+".port.number", d.Port.Number)
	}
}
