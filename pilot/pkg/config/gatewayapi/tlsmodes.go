package gatewayapi

import (
	"fmt"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// terminates reports whether a TLS-family listener (HTTPS, TLS)
// terminates TLS (HTTPS, TLS Terminate) rather than passing it through.
func terminates(l gw.Listener) bool {
	switch l.Protocol {
	case gw.HTTPSProtocolType:
		return true
	case gw.TLSProtocolType:
		return l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode != gw.TLSModePassthrough
	}
	return false
}

// mixedTermination finds the TLS-family listeners (HTTPS, TLS) sharing a
// port with one of the other termination: a Terminate and a Passthrough
// listener on one port. Wayfinder does not serve that mix (the
// TLSRouteModeMixed feature is not claimed: one Envoy listener per port
// either terminates or passes through), so, as the specification and
// the conformance test TLSRouteListenerMixedTerminationNotSupported ask,
// every such listener is refused (Accepted False) and reported
// Conflicted, both with reason ProtocolConflict (listenerConflicts), and
// none of them is served.
func mixedTermination(ls []gw.Listener) map[gw.SectionName]cond {
	out := map[gw.SectionName]cond{}
	tlsFamily := func(l gw.Listener) bool {
		return l.Protocol == gw.HTTPSProtocolType || l.Protocol == gw.TLSProtocolType
	}
	for i, a := range ls {
		if !tlsFamily(a) {
			continue
		}
		for j, b := range ls {
			if i == j || a.Port != b.Port || !tlsFamily(b) || terminates(a) == terminates(b) {
				continue
			}
			if _, seen := out[a.Name]; !seen {
				out[a.Name] = cond{reason: string(gw.ListenerReasonProtocolConflict),
					message: fmt.Sprintf("listener %s %s on port %d and listener %s %s: mixed TLS termination on one port is not supported",
						a.Name, terminationVerb(a), a.Port, b.Name, terminationVerb(b))}
			}
		}
	}
	return out
}

func terminationVerb(l gw.Listener) string {
	if terminates(l) {
		return "terminates TLS"
	}
	return "passes TLS through"
}
