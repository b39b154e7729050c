package gatewayapi

import (
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// SecretGrants are, as one conversion decided, the Istio Gateways it
// generated for listeners with a certificate, whose proxies each one
// binds, and the Secrets of other namespaces a ReferenceGrant lends each
// (the listener names the Secret in its certificateRefs and a
// ReferenceGrant in the Secret's namespace allows the Gateways of the
// listener's namespace). It is the Gateway API's authorization for
// sending those Secrets over SDS (model.GatewaySecretGrants): to the
// proxies of that Gateway only, never to a proxy another Gateway, or an
// Istio Gateway, merely selects; a Secret no listener references is lent
// to nobody, whatever the grants say. The zero value knows no Gateway.
type SecretGrants struct {
	// gateways maps the generated Istio Gateway's "namespace/name" to
	// its binding.
	gateways map[string]*binding
}

// binding is what one generated Gateway's proxies are entitled to.
type binding struct {
	// source is the generated config's source ("Gateway NS/NAME"): an
	// Istio Gateway of the same name read from the API server has
	// another, so it never passes for the generated one.
	source string
	// serviceAccount is the one Wayfinder deploys the Gateway's proxies
	// with; "" when it does not deploy them.
	serviceAccount string
	// lent are the Secrets of other namespaces the listener uses by a
	// ReferenceGrant.
	lent map[model.SecretRef]bool
}

var _ model.GatewaySecretGrants = SecretGrants{}

// GeneratedGateway reports whether key and source are those of a
// generated Gateway of a listener with a certificate, and the
// ServiceAccount its proxies run as ("" when not deployed by Wayfinder).
func (s SecretGrants) GeneratedGateway(key config.Key, source string) (string, bool) {
	b := s.lookup(key, source)
	if b == nil {
		return "", false
	}
	return b.serviceAccount, true
}

// GatewayMayUse reports whether generated Gateway key's listener uses
// Secret ref of another namespace by a ReferenceGrant.
func (s SecretGrants) GatewayMayUse(key config.Key, ref model.SecretRef) bool {
	b := s.gateways[key.Namespace+"/"+key.Name]
	return key.Kind == schema.Gateway && b != nil && b.lent[ref]
}

func (s SecretGrants) lookup(key config.Key, source string) *binding {
	if key.Kind != schema.Gateway {
		return nil
	}
	b := s.gateways[key.Namespace+"/"+key.Name]
	if b == nil || b.source != source {
		return nil
	}
	return b
}

// Len is the number of (Gateway, Secret) pairs lent.
func (s SecretGrants) Len() int {
	n := 0
	for _, b := range s.gateways {
		n += len(b.lent)
	}
	return n
}

// DeployedServiceAccount is the ServiceAccount Wayfinder runs a Gateway's
// proxies as when it deploys them (deploys: automated deployment is on),
// as the deployer names it (DeploymentName); "" when their deployment is
// the user's (Managed).
func DeployedServiceAccount(g *gw.Gateway, deploys bool) string {
	if !deploys || !Managed(g) {
		return ""
	}
	return DeploymentName(g)
}

// bind records that listener l of Gateway g terminates TLS with Secret
// ref: its generated Istio Gateway is bound to g's proxies and, when ref
// is of another namespace (allowed by a ReferenceGrant), lent ref.
func (s *SecretGrants) bind(g *gw.Gateway, l gw.SectionName, ref model.SecretRef, deploys bool) {
	if s.gateways == nil {
		s.gateways = map[string]*binding{}
	}
	key := g.Namespace + "/" + IstioGatewayName(g.Name, l)
	b := s.gateways[key]
	if b == nil {
		b = &binding{source: Source("Gateway", g), serviceAccount: DeployedServiceAccount(g, deploys), lent: map[model.SecretRef]bool{}}
		s.gateways[key] = b
	}
	if ref.Namespace != g.Namespace {
		b.lent[ref] = true
	}
}
