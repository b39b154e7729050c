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
	// namespace is authorized by a ReferenceGrant lending it to the
	// generated Gateway's listener (SecretScope.Grants), never by RBAC.
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
	// GatewayAPI marks the kubernetes-gateway:// form. The form itself
	// authorizes nothing: what a Gateway generated from the Gateway API
	// may have is known from GatewaySecretGrants (SecretScope.Refusal).
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

// UpstreamNamespaceError says why a DestinationRule's credentialName that
// names a namespace is not served, or "" when c names none. Istio config
// names Secrets of the proxy's namespace only, and a DestinationRule's
// clusters are shared by the gateways of every namespace: a name with a
// namespace (NAMESPACE/NAME, kubernetes://NAMESPACE/NAME, or the Gateway
// API's kubernetes-gateway:// form) could only be served to a gateway
// for another object's sake (an Ingress of that namespace, a Gateway a
// ReferenceGrant lends the Secret), and its clusters would then present
// that Secret. So such clusters are not built.
func (c Credential) UpstreamNamespaceError() string {
	if c.Namespace == "" && !c.GatewayAPI {
		return ""
	}
	return fmt.Sprintf("credentialName %q names a namespace; a DestinationRule's credentialName names a Secret of the gateway proxy's namespace (NAME or kubernetes://NAME)", strings.TrimPrefix(c.ResourceName, KubernetesSecretPrefix))
}

// SecretAuthorizer answers from the cluster's RBAC what a proxy's
// ServiceAccount may read. Kubernetes mode asks the API server
// (SubjectAccessReview) and caches the answers. Neither method waits for
// the API server: a question not answered yet is refused (fail closed),
// reviewed in the background, and a push is asked for when the answer
// comes or changes.
type SecretAuthorizer interface {
	// CanListSecrets reports whether id may list the Secrets of
	// namespace; when not, reason says why.
	CanListSecrets(id Identity, namespace string) (ok bool, reason string)
	// CanGetSecret reports whether id may get Secret ref.
	CanGetSecret(id Identity, ref SecretRef) (ok bool, reason string)
}

// GatewaySecretGrants answers for the Gateway API which Istio Gateways
// the conversion generated, whose proxies they bind, and which Secrets of
// other namespaces a ReferenceGrant lends them. The conversion computes
// it from the Gateway API objects, so nothing written in an Istio
// Gateway (an annotation, the kubernetes-gateway:// form) can claim it.
type GatewaySecretGrants interface {
	// GeneratedGateway reports whether gateway (an Istio Gateway's key
	// and config source) was generated from a Gateway API listener with
	// a certificate; serviceAccount is the ServiceAccount Wayfinder
	// deploys that Gateway's proxies with, "" when it does not deploy
	// them.
	GeneratedGateway(gateway config.Key, source string) (serviceAccount string, ok bool)
	// GatewayMayUse reports whether generated gateway's listener names
	// Secret ref of another namespace and a ReferenceGrant there allows
	// it.
	GatewayMayUse(gateway config.Key, ref SecretRef) bool
}

// SecretOwner is the object whose field names a credential: the Gateway
// of a server, or a DestinationRule. Who may name which Secret depends on
// it (SecretScope.Refusal).
type SecretOwner struct {
	Key config.Key
	// Source is the object's config source: "Ingress NS/NAME" for the
	// Gateways converted from an Ingress, "Gateway NS/NAME" for those of
	// a Gateway API Gateway.
	Source string
}

// IngressSourcePrefix starts the config source of the Gateways converted
// from an Ingress (ingress.Source). An Ingress names only Secrets of its
// own namespace, and no object of the API server has such a source.
const IngressSourcePrefix = "Ingress "

// FromIngress reports whether o was converted from an Ingress.
func (o SecretOwner) FromIngress() bool { return strings.HasPrefix(o.Source, IngressSourcePrefix) }

// SecretScope is whom the SDS secrets of one gateway configuration are
// for: the proxies of one verified identity. Secrets are resolved in its
// namespace and each is checked against the rule in Refusal.
type SecretScope struct {
	// Identity is the proxies' verified identity; nil on the plaintext
	// port, which is never sent key material.
	Identity *Identity
	// Authorizer answers from RBAC. Nil means there is no RBAC to ask
	// (file mode, offline analysis): a verified proxy may have the
	// Secrets of its own namespace, and no other namespace's.
	Authorizer SecretAuthorizer
	// Grants answer for the Gateways generated from the Gateway API; nil
	// knows none (their credentials are then checked as Istio config's).
	Grants GatewaySecretGrants
	// owner is set by For.
	owner SecretOwner
}

// For is the scope that authorizes the Secrets named by owner (a
// Gateway, for its server's credential, or a DestinationRule).
func (s SecretScope) For(owner SecretOwner) SecretScope {
	s.owner = owner
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

// Refusal decides whether Secret ref, named by the scope's owner, may be
// sent to the scope's proxies, before the Secret is read: it returns why
// not, "" when it may. Both the proxy and the object naming the Secret
// must be entitled to it:
//   - only a verified identity is sent key material;
//   - a Gateway generated from a Gateway API listener serves its proxies
//     only (the proxies of its namespace; when Wayfinder deploys them,
//     those running as the ServiceAccount it made): the Secret of its
//     namespace it names, or one of another namespace a ReferenceGrant
//     lends it. Proxies Wayfinder does not deploy must also pass the
//     namespace review below;
//   - Istio config (Gateways, DestinationRules) names Secrets of the
//     proxy's namespace only, as istiod (filterAuthorizedResources: an
//     unverified cross-namespace reference is never allowed), and the
//     proxy's ServiceAccount must be allowed to list the Secrets there,
//     or to get that one (the namespace review, istiod's Authorize);
//   - an Ingress names a Secret of its own namespace, which a proxy of
//     another namespace gets when its ServiceAccount may get that Secret
//     (a Role in the Secret's namespace granting it).
//
// Nothing here depends on whether the Secret exists or what it holds, so
// a refusal says the same whether it is absent, unusable or not theirs.
func (s SecretScope) Refusal(ref SecretRef) string {
	if s.Identity == nil {
		return "key material is only sent to authenticated proxies (secure port)"
	}
	id := *s.Identity
	if s.Grants != nil {
		if sa, ok := s.Grants.GeneratedGateway(s.owner.Key, s.owner.Source); ok {
			return s.gatewayAPIRefusal(ref, sa)
		}
	}
	owner := s.ownerName()
	switch {
	case ref.Namespace == id.Namespace:
		return s.namespaceRefusal(ref)
	case s.owner.FromIngress() && ref.Namespace == s.owner.Key.Namespace:
		if s.Authorizer == nil {
			return fmt.Sprintf("it is not in the proxy's namespace %s, and without RBAC to ask nothing grants %s another namespace's Secret", id.Namespace, s)
		}
		if ok, reason := s.Authorizer.CanGetSecret(id, ref); !ok {
			return fmt.Sprintf("it is not in the proxy's namespace %s, and ServiceAccount %s/%s may not get it: %s", id.Namespace, id.Namespace, id.ServiceAccount, reason)
		}
		return ""
	case s.owner.FromIngress():
		return fmt.Sprintf("%s may name Secrets of its own namespace %s only", owner, s.owner.Key.Namespace)
	}
	return fmt.Sprintf("%s may name Secrets of the proxy's namespace %s only (Istio config never names another namespace's Secret; a Gateway API listener may, with a ReferenceGrant)", owner, id.Namespace)
}

// gatewayAPIRefusal applies the Gateway API's rule to ref, named by the
// scope's owner, a generated Gateway whose proxies run as serviceAccount
// ("" when Wayfinder does not deploy them).
func (s SecretScope) gatewayAPIRefusal(ref SecretRef, serviceAccount string) string {
	id := *s.Identity
	owner := s.ownerName()
	switch {
	case s.owner.Key.Namespace != id.Namespace:
		return fmt.Sprintf("%s serves the proxies of its namespace %s only", owner, s.owner.Key.Namespace)
	case serviceAccount != "" && serviceAccount != id.ServiceAccount:
		return fmt.Sprintf("%s serves its own proxies only, which Wayfinder deploys with ServiceAccount %s/%s, not %s/%s",
			owner, s.owner.Key.Namespace, serviceAccount, id.Namespace, id.ServiceAccount)
	case ref.Namespace != id.Namespace && !s.Grants.GatewayMayUse(s.owner.Key, ref):
		return fmt.Sprintf("it is not in the Gateway's namespace %s, and no ReferenceGrant of namespace %s lends it to %s", id.Namespace, ref.Namespace, owner)
	case serviceAccount != "":
		return ""
	}
	// Proxies deployed by hand: whoever runs them must have given their
	// ServiceAccount the Secrets of the namespace, as for Istio config.
	return s.namespaceRefusal(SecretRef{Namespace: id.Namespace, Name: refNameIn(ref, id.Namespace)})
}

// refNameIn is ref's name when it is in namespace ns, else "" (a lent
// Secret: only the namespace-wide list right counts for it).
func refNameIn(ref SecretRef, ns string) string {
	if ref.Namespace == ns {
		return ref.Name
	}
	return ""
}

// namespaceRefusal is the namespace review: the proxy's ServiceAccount
// may list the Secrets of its namespace, or get ref (when ref names one).
func (s SecretScope) namespaceRefusal(ref SecretRef) string {
	if s.Authorizer == nil {
		return ""
	}
	id := *s.Identity
	ok, listReason := s.Authorizer.CanListSecrets(id, id.Namespace)
	if ok {
		return ""
	}
	if ref.Name != "" {
		ok, getReason := s.Authorizer.CanGetSecret(id, ref)
		if ok {
			return ""
		}
		return fmt.Sprintf("ServiceAccount %s/%s may neither list the Secrets of namespace %s (%s) nor get this one (%s)",
			id.Namespace, id.ServiceAccount, id.Namespace, listReason, getReason)
	}
	return fmt.Sprintf("ServiceAccount %s/%s may not list the Secrets of namespace %s: %s", id.Namespace, id.ServiceAccount, id.Namespace, listReason)
}

// ownerName names the scope's owner in messages.
func (s SecretScope) ownerName() string {
	k := s.owner.Key
	switch {
	case k.Name == "":
		return "the config"
	case s.owner.FromIngress():
		return "the Gateway of " + strings.TrimPrefix(s.owner.Source, IngressSourcePrefix) + " (an Ingress)"
	}
	return k.String()
}

// ScopedGatewayGroupKey is the key of the gateway group a proxy belongs
// to: GatewayGroupKey(gws), extended by what the group's secrets depend
// on. Gateways without credentialName servers give every proxy the same
// config, whoever it is. With them, plaintext proxies share one group (no
// secrets), and verified proxies share one per namespace and
// ServiceAccount: what they may have depends on both (the namespace
// review, a deployed Gateway's ServiceAccount). upstream are the
// credentials the push's DestinationRules name (UpstreamCredentials):
// their client certificates and CAs are resolved for the group's proxies
// the same way, so they count as the Gateways' do.
func ScopedGatewayGroupKey(gws []config.Config, scope SecretScope, upstream []Credential) string {
	key := GatewayGroupKey(gws)
	uses := false
	for _, gw := range gws {
		if len(gatewayCredentials(gw)) > 0 || gw.Annotations[BackendClientCertificateAnnotation] != "" {
			uses = true
			break
		}
	}
	if len(gws) > 0 && len(upstream) > 0 {
		// Proxies no Gateway selects are served no upstream secrets.
		uses = true
	}
	switch {
	case !uses:
		return key
	case scope.Identity == nil:
		return key + "/plaintext"
	}
	return key + "/ns/" + scope.Identity.Namespace + "/sa/" + scope.Identity.ServiceAccount
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
// name. Names that do not parse, or name a namespace, are left out (the
// cluster builder reports them). The xDS server computes them once per push for the group keys.
func UpstreamCredentials(push *PushContext) []Credential {
	seen := map[string]Credential{}
	visit := func(t *networking.ClientTLSSettings) {
		m := t.GetMode()
		if t.GetCredentialName() == "" || (m != networking.ClientTLSSettings_SIMPLE && m != networking.ClientTLSSettings_MUTUAL) ||
			IsBackendTLSCredential(t.GetCredentialName()) {
			return // a BackendTLSPolicy's CA is in the cluster, not a Secret
		}
		if c, err := ParseCredentialName(t.GetCredentialName()); err == nil && c.UpstreamNamespaceError() == "" {
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
