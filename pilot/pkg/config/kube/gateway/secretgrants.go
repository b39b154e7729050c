package gateway

import "github.com/wayfinder-dev/wayfinder/pilot/pkg/model"

// SecretGrants are the Secrets of other namespaces that the Gateways of a
// namespace may use, as one conversion decided: a handled Gateway of that
// namespace names the Secret in a listener's certificateRefs and a
// ReferenceGrant in the Secret's namespace allows it. It is the Gateway
// API's authorization for sending such a Secret over SDS to the gateway
// proxies of that namespace (model.GatewaySecretGrants); a Secret no
// Gateway references is in no set, whatever the grants say. The zero
// value allows nothing.
type SecretGrants struct {
	// byNamespace maps a Gateway namespace to the Secrets its Gateways
	// may use.
	byNamespace map[string]map[model.SecretRef]bool
}

var _ model.GatewaySecretGrants = SecretGrants{}

// GatewayMayUse reports whether the Gateways of gatewayNamespace may use
// Secret ref.
func (s SecretGrants) GatewayMayUse(gatewayNamespace string, ref model.SecretRef) bool {
	return s.byNamespace[gatewayNamespace][ref]
}

// Len is the number of (namespace, Secret) pairs allowed.
func (s SecretGrants) Len() int {
	n := 0
	for _, m := range s.byNamespace {
		n += len(m)
	}
	return n
}

func (s *SecretGrants) add(gatewayNamespace string, ref model.SecretRef) {
	if s.byNamespace == nil {
		s.byNamespace = map[string]map[model.SecretRef]bool{}
	}
	m := s.byNamespace[gatewayNamespace]
	if m == nil {
		m = map[model.SecretRef]bool{}
		s.byNamespace[gatewayNamespace] = m
	}
	m[ref] = true
}
