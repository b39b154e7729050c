package gatewayapi

import (
	"fmt"

	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// Gateway spec.tls.backend.clientCertificateRef (GEP-3155) is the
// certificate a Gateway's proxies present when they originate TLS to a
// backend, which in the Gateway API is what a BackendTLSPolicy asks for.
//
// The reference is checked as istiod 1.29 checks it
// (validateBackendClientCertificateRef): a Secret (core group), existing,
// holding a certificate and key that match, of the Gateway's namespace or
// of another namespace a ReferenceGrant lends to Gateways of the
// Gateway's; otherwise the Gateway's ResolvedRefs is False with reason
// InvalidClientCertificateRef (RefNotPermitted without a grant), and the
// Gateway stays Accepted.
//
// istiod 1.29 stops there: it does not present the certificate
// (GatewayBackendClientCertificate is among its skipped features).
// Wayfinder presents it: every Istio Gateway generated for the Gateway's
// listeners carries model.BackendClientCertificateAnnotation naming the
// Secret, the push context gives the Gateway's proxies their own view of
// the clusters (model.PushContext.ViewKey), and in that view the clusters
// whose TLS a BackendTLSPolicy set present the certificate over SDS. The
// Secret is lent, in SecretGrants, to the Gateway's own proxies alone.

// backendClientCertificate resolves g's clientCertificateRef and returns
// the annotations of g's generated Istio Gateways (nil when there is no
// usable one), recording the outcome for g's ResolvedRefs.
func (c *converter) backendClientCertificate(g *gw.Gateway) map[string]string {
	if g.Spec.TLS == nil || g.Spec.TLS.Backend == nil || g.Spec.TLS.Backend.ClientCertificateRef == nil {
		return nil
	}
	ref := *g.Spec.TLS.Backend.ClientCertificateRef
	src, field := Source("Gateway", g), "spec.tls.backend.clientCertificateRef"
	fail := func(reason gw.GatewayConditionReason, format string, args ...any) map[string]string {
		msg := fmt.Sprintf(format, args...)
		c.errorf(src, field, "%s (%s); connections to backends present no client certificate", msg, reason)
		c.st.gatewayUnresolved(g, string(reason), msg)
		return nil
	}
	if group, kind := string(deref(ref.Group, "")), string(deref(ref.Kind, "Secret")); group != "" || kind != "Secret" {
		return fail(gw.GatewayReasonInvalidClientCertificateRef, "kind %s is not supported; only a Secret is", groupKind(group, kind))
	}
	ns := string(deref(ref.Namespace, gw.Namespace(g.Namespace)))
	name := string(ref.Name)
	c.st.referSecret(ns, name)
	if ns != g.Namespace && !c.grants.allowed("Gateway", g.Namespace, "", "Secret", ns, name) {
		return fail(gw.GatewayReasonRefNotPermitted, "Secret %s/%s is in another namespace and no ReferenceGrant there allows it", ns, name)
	}
	if c.in.Secrets == nil {
		// File mode reads no Secrets, so none can be sent: presenting
		// nothing refuses more than asked, never less.
		c.warnf(src, field, "Secret %s/%s cannot be served here (no Secrets are read in file mode); connections to backends present no client certificate", ns, name)
		return nil
	}
	if p := c.certificateProblem(ns, name); p != "" {
		return fail(gw.GatewayReasonInvalidClientCertificateRef, "%s", p)
	}
	secret := model.SecretRef{Namespace: ns, Name: name}
	for _, l := range g.Spec.Listeners {
		// Each generated Istio Gateway may name the Secret; one of
		// another namespace is lent to it by the grant just checked.
		c.st.secrets.bind(g, l.Name, secret, c.opts.DeploysProxies)
	}
	return map[string]string{model.BackendClientCertificateAnnotation: model.KubernetesGatewaySecretPrefix + ns + "/" + name}
}

// gatewayUnresolved records that a reference of Gateway g itself (not of
// a listener) did not resolve: its ResolvedRefs is False.
func (r *recorder) gatewayUnresolved(g *gw.Gateway, reason, message string) {
	if r.unresolved == nil {
		r.unresolved = map[string]*cond{}
	}
	r.unresolved[g.Namespace+"/"+g.Name] = &cond{reason: reason, message: message}
}
