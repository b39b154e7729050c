package model

import (
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func TestParseCredentialName(t *testing.T) {
	cases := []struct {
		in   string
		want Credential
		ns   string // Resolve("tenant").Namespace
		err  string
	}{
		{in: "cert", want: Credential{ResourceName: "kubernetes://cert", Name: "cert"}, ns: "tenant"},
		{in: "kubernetes://cert", want: Credential{ResourceName: "kubernetes://cert", Name: "cert"}, ns: "tenant"},
		{in: "apps/cert", want: Credential{ResourceName: "kubernetes://apps/cert", Namespace: "apps", Name: "cert"}, ns: "apps"},
		{in: "kubernetes://apps/cert", want: Credential{ResourceName: "kubernetes://apps/cert", Namespace: "apps", Name: "cert"}, ns: "apps"},
		{in: "kubernetes-gateway://apps/cert", want: Credential{ResourceName: "kubernetes-gateway://apps/cert", Namespace: "apps", Name: "cert", GatewayAPI: true}, ns: "apps"},
		{in: "kubernetes-gateway://cert", want: Credential{ResourceName: "kubernetes-gateway://cert", Name: "cert", GatewayAPI: true}, ns: "tenant"},
		{in: "kubernetes-gateway://apps/", err: "want NAME, NAMESPACE/NAME or kubernetes-gateway://NAMESPACE/NAME"},
		{in: "builtin://", err: "not served"},
		{in: "kubernetes://", err: "names no Secret"},
		{in: "apps/", err: "want NAME, NAMESPACE/NAME"},
		{in: "a/b/c", err: "want NAME, NAMESPACE/NAME"},
	}
	for _, c := range cases {
		got, err := ParseCredentialName(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.in) {
				t.Errorf("%q: error %v, want one naming it and containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
		if ref := got.Resolve("tenant"); ref.Namespace != c.ns || ref.Name != "cert" {
			t.Errorf("%q resolved for tenant: %v", c.in, ref)
		}
	}
}

type fakeAuthz map[string]bool

func (f fakeAuthz) CanGetSecret(id Identity, ref SecretRef) (bool, string) {
	return f[id.Namespace+"/"+id.ServiceAccount+"|"+ref.String()], "denied by test"
}

func TestSecretScopeRefusal(t *testing.T) {
	gw := &Identity{Namespace: "istio-system", ServiceAccount: "gw"}
	authz := fakeAuthz{"istio-system/gw|apps/cert": true}
	cases := []struct {
		scope SecretScope
		ref   SecretRef
		want  string // "" allowed, else a substring of the reason
	}{
		{SecretScope{}, SecretRef{"istio-system", "cert"}, "only sent to authenticated proxies"},
		{SecretScope{Identity: gw}, SecretRef{"istio-system", "cert"}, ""},
		{SecretScope{Identity: gw}, SecretRef{"apps", "cert"}, "no authorizer"},
		{SecretScope{Identity: gw, Authorizer: authz}, SecretRef{"apps", "cert"}, ""},
		{SecretScope{Identity: gw, Authorizer: authz}, SecretRef{"apps", "other"}, "ServiceAccount istio-system/gw may not get it: denied by test"},
		{SecretScope{Identity: &Identity{Namespace: "tenant", ServiceAccount: "gw"}, Authorizer: authz}, SecretRef{"apps", "cert"}, "may not get it"},
	}
	for i, c := range cases {
		got := c.scope.Refusal(c.ref)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("case %d (%s, %s): refusal %q, want %q", i, c.scope, c.ref, got, c.want)
		}
	}
}

// Proxies share a group exactly when their secrets cannot differ.
func TestScopedGatewayGroupKey(t *testing.T) {
	store := parseStore(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: plain, namespace: istio-system}
spec:
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: own, namespace: istio-system}
spec:
  servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: cert}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: cross, namespace: istio-system}
spec:
  servers: [{port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: apps/cert}}]
`)
	gws := map[string][]config.Config{}
	for _, g := range store.List(schema.Gateway, "") {
		gws[g.Name] = []config.Config{g}
	}
	a1 := SecretScope{Identity: &Identity{Namespace: "istio-system", ServiceAccount: "a"}}
	a2 := SecretScope{Identity: &Identity{Namespace: "istio-system", ServiceAccount: "a"}}
	b := SecretScope{Identity: &Identity{Namespace: "istio-system", ServiceAccount: "b"}}
	tenant := SecretScope{Identity: &Identity{Namespace: "tenant", ServiceAccount: "a"}}
	plain := SecretScope{}
	key := func(gws []config.Config, scope SecretScope) string { return ScopedGatewayGroupKey(gws, scope, nil) }
	if k := key(gws["plain"], plain); k != GatewayGroupKey(gws["plain"]) || k != key(gws["plain"], tenant) || k != key(gws["plain"], a1) {
		t.Error("without credentials every proxy shares the gateways' group")
	}
	if key(gws["own"], a1) != key(gws["own"], b) {
		t.Error("own-namespace secrets: ServiceAccounts of one namespace share a group")
	}
	if key(gws["own"], a1) == key(gws["own"], tenant) || key(gws["own"], a1) == key(gws["own"], plain) {
		t.Error("own-namespace secrets: another namespace, or plaintext, shares the group")
	}
	if key(gws["cross"], a1) != key(gws["cross"], a2) || key(gws["cross"], a1) == key(gws["cross"], b) {
		t.Error("another namespace's secret: the group is per ServiceAccount")
	}

	// DestinationRule credentials are resolved for the group's proxies
	// too: they split groups the way the Gateways' do.
	own, _ := ParseCredentialName("client")
	cross, _ := ParseCredentialName("apps/client")
	up := ScopedGatewayGroupKey
	if up(gws["plain"], a1, []Credential{own}) == up(gws["plain"], tenant, []Credential{own}) ||
		up(gws["plain"], a1, []Credential{own}) == up(gws["plain"], plain, []Credential{own}) {
		t.Error("a DestinationRule credential: another namespace, or plaintext, shares the group")
	}
	if up(gws["plain"], a1, []Credential{own}) != up(gws["plain"], b, []Credential{own}) {
		t.Error("a DestinationRule credential of the proxy's namespace: ServiceAccounts of one namespace share a group")
	}
	if up(gws["plain"], a1, []Credential{cross}) == up(gws["plain"], b, []Credential{cross}) {
		t.Error("a DestinationRule credential of another namespace: the group is per ServiceAccount")
	}
	if up(nil, a1, []Credential{own}) != up(nil, tenant, []Credential{own}) {
		t.Error("proxies no Gateway selects get no upstream secrets: their key does not depend on them")
	}
}

// Credential names, whether a Gateway's or a DestinationRule's, give the
// CA resource its name by appending "-cacert", as Istio does.
func TestCAResourceName(t *testing.T) {
	for in, want := range map[string]string{
		"cert":                   "kubernetes://cert-cacert",
		"kubernetes://cert":      "kubernetes://cert-cacert",
		"apps/cert":              "kubernetes://apps/cert-cacert",
		"kubernetes://apps/cert": "kubernetes://apps/cert-cacert",
	} {
		c, err := ParseCredentialName(in)
		if err != nil || c.CAResourceName() != want {
			t.Errorf("%s: CA resource %q (%v), want %q", in, c.CAResourceName(), err, want)
		}
	}
}
