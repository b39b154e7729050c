package model

import (
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// fakeGrants knows generated Gateways by "namespace/name" and source, with
// the ServiceAccount their proxies run as and the Secrets lent to them.
type fakeGrants map[string]struct {
	source, sa string
	lent       []SecretRef
}

func (f fakeGrants) GeneratedGateway(k config.Key, source string) (string, bool) {
	g, ok := f[k.Namespace+"/"+k.Name]
	if !ok || g.source != source {
		return "", false
	}
	return g.sa, true
}

func (f fakeGrants) GatewayMayUse(k config.Key, ref SecretRef) bool {
	for _, r := range f[k.Namespace+"/"+k.Name].lent {
		if r == ref {
			return true
		}
	}
	return false
}

// A Gateway generated from a Gateway API listener serves its own proxies:
// those of its namespace running as the ServiceAccount Wayfinder deployed
// them with, whatever labels another proxy claims; a ReferenceGrant lends
// a Secret to that Gateway only. Proxies deployed by hand pass the
// namespace review instead. An Istio Gateway writing the
// kubernetes-gateway:// form, or named like a generated one, is Istio
// config.
func TestSecretScopeGatewayGrants(t *testing.T) {
	key := func(name string) config.Key { return config.Key{Kind: schema.Gateway, Namespace: "edge", Name: name} }
	grants := fakeGrants{
		"edge/managed-https":   {source: "Gateway edge/managed", sa: "managed-wayfinder", lent: []SecretRef{{"certs", "cert"}}},
		"edge/byhand-https":    {source: "Gateway edge/byhand", lent: []SecretRef{{"certs", "cert"}}},
		"edge/unrelated-https": {source: "Gateway edge/unrelated", sa: "unrelated-wayfinder"},
	}
	managed := SecretOwner{Key: key("managed-https"), Source: "Gateway edge/managed"}
	byHand := SecretOwner{Key: key("byhand-https"), Source: "Gateway edge/byhand"}
	unrelated := SecretOwner{Key: key("unrelated-https"), Source: "Gateway edge/unrelated"}
	impostor := SecretOwner{Key: key("managed-https"), Source: "kube://edge/managed-https"}
	deployed := &Identity{Namespace: "edge", ServiceAccount: "managed-wayfinder"}
	sidecar := &Identity{Namespace: "edge", ServiceAccount: "default"}
	lister := &Identity{Namespace: "edge", ServiceAccount: "lister"}
	authz := fakeAuthz{"edge/lister|list|edge/": true}
	cases := []struct {
		name  string
		id    *Identity
		owner SecretOwner
		ref   SecretRef
		want  string // "" allowed, else a substring of the reason
	}{
		{"deployed proxy, own namespace's Secret", deployed, managed, SecretRef{"edge", "tls"}, ""},
		{"deployed proxy, lent Secret", deployed, managed, SecretRef{"certs", "cert"}, ""},
		{"deployed proxy, Secret not lent", deployed, managed, SecretRef{"certs", "other"}, "no ReferenceGrant of namespace certs lends it to Gateway edge/managed-https"},
		{"another ServiceAccount claiming its labels", sidecar, managed, SecretRef{"edge", "tls"}, "which Wayfinder deploys with ServiceAccount edge/managed-wayfinder, not edge/default"},
		{"another ServiceAccount, lent Secret", lister, managed, SecretRef{"certs", "cert"}, "not edge/lister"},
		{"a grant lends to its Gateway only", &Identity{Namespace: "edge", ServiceAccount: "unrelated-wayfinder"}, unrelated, SecretRef{"certs", "cert"}, "no ReferenceGrant"},
		{"another namespace", &Identity{Namespace: "tenant", ServiceAccount: "managed-wayfinder"}, managed, SecretRef{"edge", "tls"}, "serves the proxies of its namespace edge only"},
		{"by hand: the namespace review", lister, byHand, SecretRef{"edge", "tls"}, ""},
		{"by hand: lent, with the namespace review", lister, byHand, SecretRef{"certs", "cert"}, ""},
		{"by hand: without it", sidecar, byHand, SecretRef{"edge", "tls"}, "may neither list"},
		{"by hand: lent, without it", sidecar, byHand, SecretRef{"certs", "cert"}, "may not list the Secrets of namespace edge"},
		{"an Istio Gateway named like a generated one", deployed, impostor, SecretRef{"certs", "cert"}, "may name Secrets of the proxy's namespace edge only"},
	}
	for _, c := range cases {
		got := SecretScope{Identity: c.id, Authorizer: authz, Grants: grants}.For(c.owner).Refusal(c.ref)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
}
