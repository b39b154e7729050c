package model

import (
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

type fakeGrants map[string]bool

func (f fakeGrants) GatewayMayUse(ns string, ref SecretRef) bool { return f[ns+"|"+ref.String()] }

// A kubernetes-gateway:// Secret of another namespace is authorized by the
// Gateway API's grants alone, for the proxies of the namespace granted;
// the same Secret named the Istio way (kubernetes://) is still authorized
// by the authorizer alone, so a ReferenceGrant never widens Istio config.
func TestSecretScopeGatewayGrants(t *testing.T) {
	edge := &Identity{Namespace: "edge", ServiceAccount: "gw"}
	grants := fakeGrants{"edge|certs/cert": true}
	denyAll := fakeAuthz{}
	allowAll := fakeAuthz{"edge/gw|certs/other": true}
	gwCred, err := ParseCredentialName("kubernetes-gateway://certs/cert")
	if err != nil {
		t.Fatal(err)
	}
	istioCred, err := ParseCredentialName("kubernetes://certs/cert")
	if err != nil {
		t.Fatal(err)
	}
	otherGW, _ := ParseCredentialName("kubernetes-gateway://certs/other")
	cases := []struct {
		name  string
		scope SecretScope
		cred  Credential
		ref   SecretRef
		want  string // "" allowed, else a substring of the reason
	}{
		{"granted", SecretScope{Identity: edge, Authorizer: denyAll, Grants: grants}, gwCred, SecretRef{"certs", "cert"}, ""},
		{"no grants wired", SecretScope{Identity: edge, Authorizer: denyAll}, gwCred, SecretRef{"certs", "cert"}, "no Gateway of that namespace references it with a ReferenceGrant"},
		{"another namespace's proxies", SecretScope{Identity: &Identity{Namespace: "tenant", ServiceAccount: "gw"}, Grants: grants}, gwCred, SecretRef{"certs", "cert"}, "namespace tenant"},
		{"not granted, even if RBAC allows", SecretScope{Identity: edge, Authorizer: allowAll, Grants: grants}, otherGW, SecretRef{"certs", "other"}, "ReferenceGrant"},
		{"Istio form is not widened by the grant", SecretScope{Identity: edge, Authorizer: denyAll, Grants: grants}, istioCred, SecretRef{"certs", "cert"}, "may not get it"},
		{"plaintext never", SecretScope{Grants: grants}, gwCred, SecretRef{"certs", "cert"}, "authenticated proxies"},
		{"own namespace", SecretScope{Identity: edge}, gwCred, SecretRef{"edge", "cert"}, ""},
	}
	for _, c := range cases {
		got := c.scope.For(c.cred).Refusal(c.ref)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
}

// Secrets a ReferenceGrant authorizes depend on the namespace alone: the
// ServiceAccounts of one namespace share the group.
func TestScopedGatewayGroupKeyGatewayGrant(t *testing.T) {
	store := parseStore(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: granted, namespace: edge}
spec:
  servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: "kubernetes-gateway://certs/cert"}}]
`)
	gws := store.List(schema.Gateway, "")
	a := SecretScope{Identity: &Identity{Namespace: "edge", ServiceAccount: "a"}}
	b := SecretScope{Identity: &Identity{Namespace: "edge", ServiceAccount: "b"}}
	tenant := SecretScope{Identity: &Identity{Namespace: "tenant", ServiceAccount: "a"}}
	if ScopedGatewayGroupKey(gws, a, nil) != ScopedGatewayGroupKey(gws, b, nil) {
		t.Error("ServiceAccounts of one namespace do not share the group")
	}
	if ScopedGatewayGroupKey(gws, a, nil) == ScopedGatewayGroupKey(gws, tenant, nil) {
		t.Error("another namespace shares the group")
	}
}
