package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Credential resource names, as Istio names them: an SDS resource
// "kubernetes://NAME" is the Secret NAME of the namespace of the proxy
// that asks for it; "kubernetes://NAMESPACE/NAME" names the namespace.
const (
	KubernetesSecretPrefix = "kubernetes://"
	// KubernetesGatewaySecretPrefix is the form the Gateway API
	// conversion writes for a listener's certificateRef, as istiod does:
	// "kubernetes-gateway://NAMESPACE/NAME". Such a Secret of another
	// namespace is authorized by a ReferenceGrant (SecretScope.Grants),
	// never by the SecretAuthorizer.
	KubernetesGatewaySecretPrefix = "kubernetes-gateway://"
	builtinPrefix                 = "builtin://"
)

// Credential is a tls.credentialName as written in a Gateway server,
// before it is resolved for a proxy. Each SDS resource made from it (the
// certificate and key today; a MUTUAL server's CA certificate, Istio's
// "NAME-cacert" resource, is a second one) is resolved with Resolve and
// checked with SecretScope.Refusal on the Secret it is read from, so every
// kind of secret follows the same namespace rule.
type Credential struct {
	// ResourceName is the SDS resource name the server's filter chain
	// fetches: "kubernetes://NAME", or "kubernetes://NAMESPACE/NAME" when
	// the credentialName names a namespace. Proxies of different
	// namespaces fetch the same name and each gets its own namespace's
	// Secret, as with istiod.
	ResourceName string
	// Namespace is the namespace the credentialName names, "" for the
	// proxy's own.
	Namespace string
	// Name is the Secret's name.
	Name string
	// GatewayAPI marks the kubernetes-gateway:// form: a Secret of another
	// namespace is sent only where the Gateway API allows it (see
	// SecretScope.For).
	GatewayAPI bool
}

// IsZero reports whether c names nothing (the server uses certificate files).
func (c Credential) IsZero() bool { return c.ResourceName == "" }

// CAResourceName is the SDS resource name of the CA bundle (and CRL) that
// goes with c, as Istio names it: its ResourceName followed by "-cacert".
// It verifies client certificates on a MUTUAL or OPTIONAL_MUTUAL server,
// and the upstream for a DestinationRule. Its Secret is resolved in the
// same namespace as c's (see CAForCredential).
func (c Credential) CAResourceName() string { return c.ResourceName + CASuffix }

// Resolve is the Secret c names for a proxy of namespace proxyNS.
func (c Credential) Resolve(proxyNS string) SecretRef {
	if c.Namespace != "" {
		return SecretRef{Namespace: c.Namespace, Name: c.Name}
	}
	return SecretRef{Namespace: proxyNS, Name: c.Name}
}

// ParseCredentialName reads a credentialName the way istiod does: "NAME"
// and "kubernetes://NAME" are the proxy's namespace's Secret NAME;
// "NAMESPACE/NAME" and "kubernetes://NAMESPACE/NAME" are NAMESPACE's;
// "kubernetes-gateway://NAMESPACE/NAME" is NAMESPACE's too, authorized as
// the Gateway API authorizes it (Credential.GatewayAPI). builtin:// is an
// error.
func ParseCredentialName(s string) (Credential, error) {
	prefix, gatewayAPI := KubernetesSecretPrefix, false
	switch {
	case strings.HasPrefix(s, KubernetesGatewaySecretPrefix):
		prefix, gatewayAPI = KubernetesGatewaySecretPrefix, true
	case strings.HasPrefix(s, builtinPrefix):
		return Credential{}, fmt.Errorf("credentialName %q: %s (the workload's own certificate) is not served", s, builtinPrefix)
	}
	rest := strings.TrimPrefix(s, prefix)
	c := Credential{ResourceName: prefix + rest, Name: rest, GatewayAPI: gatewayAPI}
	if ns, name, ok := strings.Cut(rest, "/"); ok {
		c.Namespace, c.Name = ns, name
		if ns == "" || name == "" || strings.Contains(name, "/") {
			return Credential{}, fmt.Errorf("credentialName %q: want NAME, NAMESPACE/NAME or %sNAMESPACE/NAME", s, prefix)
		}
	}
	if c.Name == "" {
		return Credential{}, fmt.Errorf("credentialName %q names no Secret", s)
	}
	return c, nil
}

// SecretAuthorizer decides whether a ServiceAccount may read a Secret of
// another namespace than its own. Kubernetes mode asks the API server
// (SubjectAccessReview, verb get) and caches the answers.
type SecretAuthorizer interface {
	// CanGetSecret reports whether id may get Secret ref; when not, reason
	// says why. A check that fails is a refusal (fail closed) that the
	// implementation retries later, asking for a push when an answer
	// changes. It may block for a bounded time on an answer not cached.
	CanGetSecret(id Identity, ref SecretRef) (ok bool, reason string)
}

// GatewaySecretGrants answers for the Gateway API whether the Gateways of
// a namespace may use a Secret of another namespace: a Gateway of that
// namespace names it in a listener's certificateRefs and a ReferenceGrant
// in the Secret's namespace allows it. The Gateway API conversion computes
// it; it never answers for a Secret no Gateway references.
type GatewaySecretGrants interface {
	GatewayMayUse(gatewayNamespace string, ref SecretRef) bool
}

// SecretScope is whom the SDS secrets of one gateway configuration are
// for: the proxies of one verified identity. Secrets are resolved in its
// namespace and each is checked against the rule in Refusal.
type SecretScope struct {
	// Identity is the proxies' verified identity; nil on the plaintext
	// port, which is never sent key material.
	Identity *Identity
	// Authorizer answers for Secrets of other namespaces; nil refuses them.
	Authorizer SecretAuthorizer
	// Grants answer for kubernetes-gateway:// Secrets of other namespaces;
	// nil refuses them.
	Grants GatewaySecretGrants
	// gatewayAPI is set by For on the scope of a kubernetes-gateway://
	// credential.
	gatewayAPI bool
}

// For is the scope that authorizes the Secrets of credential c: for the
// kubernetes-gateway:// form a Secret of another namespace is authorized
// by Grants alone (the Gateway API's ReferenceGrant), not by the
// Authorizer; for the others by the Authorizer alone, so a ReferenceGrant
// never widens what Istio config may name.
func (s SecretScope) For(c Credential) SecretScope {
	s.gatewayAPI = c.GatewayAPI
	return s
}

// Namespace is the namespace credentialNames without one resolve in.
func (s SecretScope) Namespace() string {
	if s.Identity == nil {
		return ""
	}
	return s.Identity.Namespace
}

// String names the scope's proxies for reports: "ns/NS/sa/SA" or
// "unauthenticated (plaintext port)".
func (s SecretScope) String() string {
	if s.Identity == nil {
		return "unauthenticated proxies (plaintext port)"
	}
	return "ns/" + s.Identity.Namespace + "/sa/" + s.Identity.ServiceAccount
}

// Refusal applies Istio's rule for sending a Secret to a proxy: only to a
// verified identity, and only a Secret of its own namespace or one its
// ServiceAccount may get. It returns why ref is refused, "" when it is not.
func (s SecretScope) Refusal(ref SecretRef) string {
	switch {
	case s.Identity == nil:
		return "key material is only sent to authenticated proxies (secure port)"
	case ref.Namespace == s.Identity.Namespace:
		return ""
	case s.gatewayAPI:
		if s.Grants != nil && s.Grants.GatewayMayUse(s.Identity.Namespace, ref) {
			return ""
		}
		return fmt.Sprintf("the Secret is not in the proxy's namespace %s, and no Gateway of that namespace references it with a ReferenceGrant of namespace %s allowing it", s.Identity.Namespace, ref.Namespace)
	case s.Authorizer == nil:
		return fmt.Sprintf("the Secret is not in the proxy's namespace %s and no authorizer can grant ServiceAccount %s/%s access to it", s.Identity.Namespace, s.Identity.Namespace, s.Identity.ServiceAccount)
	}
	if ok, reason := s.Authorizer.CanGetSecret(*s.Identity, ref); !ok {
		return fmt.Sprintf("the Secret is not in the proxy's namespace %s and ServiceAccount %s/%s may not get it: %s", s.Identity.Namespace, s.Identity.Namespace, s.Identity.ServiceAccount, reason)
	}
	return ""
}

// ScopedGatewayGroupKey is the key of the gateway group a proxy belongs
// to: GatewayGroupKey(gws), extended by what the group's secrets depend
// on. Gateways without credentialName servers give every proxy the same
// config, whoever it is. With them, plaintext proxies share one group (no
// secrets), and verified proxies share one per namespace, or per namespace
// and ServiceAccount when a credentialName names another namespace, whose
// Secret the authorizer may give to one ServiceAccount and not to another.
// So proxies of one namespace and ServiceAccount with the same Gateways
// share one translation. upstream are the credentials the push's
// DestinationRules name (UpstreamCredentials): their client certificates
// and CAs are resolved for the group's proxies the same way, so they
// count as the Gateways' do.
func ScopedGatewayGroupKey(gws []config.Config, scope SecretScope, upstream []Credential) string {
	key := GatewayGroupKey(gws)
	uses, crossNS := false, false
	note := func(c Credential, byGrant bool) {
		uses = true
		if c.Namespace != "" && c.Namespace != scope.Namespace() && !byGrant {
			crossNS = true
		}
	}
	for _, gw := range gws {
		for _, c := range gatewayCredentials(gw) {
			// A ReferenceGrant authorizes a namespace's Gateways,
			// whatever their ServiceAccount: the namespace in the key is
			// enough (SecretScope.For).
			note(c, c.GatewayAPI)
		}
	}
	if len(gws) > 0 {
		// Proxies no Gateway selects are served no upstream secrets.
		// Upstream credentials are always authorized by the Authorizer.
		for _, c := range upstream {
			note(c, false)
		}
	}
	switch {
	case !uses:
		return key
	case scope.Identity == nil:
		return key + "/plaintext"
	case crossNS:
		return key + "/ns/" + scope.Identity.Namespace + "/sa/" + scope.Identity.ServiceAccount
	}
	return key + "/ns/" + scope.Identity.Namespace
}

// SecretRefusal is an SDS secret a gateway configuration references that
// its proxies are not sent, and why: for a Gateway server its filter chain
// is left out; for a DestinationRule credential the clusters naming it
// wait for it.
type SecretRefusal struct {
	// Resource is the SDS resource name; Secret the Kubernetes Secret it
	// resolved to for the proxies' namespace.
	Resource string `json:"resource"`
	Secret   string `json:"secret"`
	// Gateway and Server locate the server: "namespace/name" and its
	// spec.servers field.
	Gateway string `json:"gateway,omitempty"`
	Server  string `json:"server,omitempty"`
	// DestinationRule and Field locate an upstream credential instead
	// ("namespace/name" and its credentialName field): the clusters naming
	// it wait for the secret; the group is still served.
	DestinationRule string `json:"destinationRule,omitempty"`
	Field           string `json:"field,omitempty"`
	Reason          string `json:"reason"`
}

// gatewayCredentials are the credentials gw's servers name; names that do
// not parse are left out (MergeGateways reports them).
func gatewayCredentials(gw config.Config) []Credential {
	var out []Credential
	for _, s := range gw.Spec.(*networking.Gateway).GetServers() {
		if name := s.GetTls().GetCredentialName(); name != "" {
			if c, err := ParseCredentialName(name); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// UpstreamCredentials are the credentials the DestinationRules of push
// name for SIMPLE or MUTUAL TLS to an upstream (traffic policies, their
// port-level settings and subsets'), deduplicated and sorted by resource
// name. Names that do not parse are left out (the cluster builder reports
// them). The xDS server computes them once per push for the group keys.
func UpstreamCredentials(push *PushContext) []Credential {
	seen := map[string]Credential{}
	visit := func(t *networking.ClientTLSSettings) {
		m := t.GetMode()
		if t.GetCredentialName() == "" || (m != networking.ClientTLSSettings_SIMPLE && m != networking.ClientTLSSettings_MUTUAL) {
			return
		}
		if c, err := ParseCredentialName(t.GetCredentialName()); err == nil {
			seen[c.ResourceName] = c
		}
	}
	policy := func(tp *networking.TrafficPolicy) {
		visit(tp.GetTls())
		for _, pl := range tp.GetPortLevelSettings() {
			visit(pl.GetTls())
		}
	}
	for _, dr := range push.DestinationRules() {
		spec, ok := dr.Spec.(*networking.DestinationRule)
		if !ok {
			continue
		}
		policy(spec.GetTrafficPolicy())
		for _, s := range spec.GetSubsets() {
			policy(s.GetTrafficPolicy())
		}
	}
	out := make([]Credential, 0, len(seen))
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, seen[name])
	}
	return out
}
