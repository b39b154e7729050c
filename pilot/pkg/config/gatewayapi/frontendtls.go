package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// Gateway spec.tls.frontend: client certificate validation (GEP-91).
//
// As istiod 1.29's resolveGatewayTLS and buildTLS
// (pilot/pkg/config/kube/gateway/conversion.go) do, the validation of a
// listener's port (its perPort entry, else the default) applies to every
// listener on that port that terminates TLS (HTTPS, TLS Terminate): the
// server becomes MUTUAL and verifies clients against the bundle of its
// caCertificateRefs. Where istiod takes one ref and ignores the mode,
// Wayfinder takes every valid ref (their bundles concatenated) and the
// mode: AllowValidOnly is MUTUAL, AllowInsecureFallback OPTIONAL_MUTUAL
// (a certificate is asked for and checked when sent, not required).
//
// A ref is a ConfigMap or a Secret (group ""), key ca.crt, of the
// Gateway's namespace or of another whose ReferenceGrant allows Gateways
// of the Gateway's namespace; its bundle must hold PEM certificates that
// parse. A ref that is not is reported on the listener, as the
// specification asks: ResolvedRefs False with InvalidCACertificateKind
// (another kind), RefNotPermitted (no grant) or InvalidCACertificateRef
// (missing, no ca.crt, not a bundle); with no valid ref at all the
// listener is also Accepted False, NoValidCACertificate, and not served,
// never served to clients without a certificate. Without a ConfigMaps or
// Secrets lookup (file mode) no ref resolves.
//
// The server names the bundle in caCertCredentialName as istiod does
// ("configmap://NS/NAME-cacert", "kubernetes-gateway://NS/NAME-cacert";
// several joined by "+") and the
// generated Gateway carries it inline under
// model.GatewayClientCAAnnotationPrefix + that name: the listener
// translator puts it in the listener's validation context (no SDS
// resource; the CA is public), so it reaches the proxies of that Gateway
// only, which alone take the generated Gateway (NamespaceOnly, its
// selector).
//
// spec.tls.backend.clientCertificateRef is backendclient.go's.

// frontendValidation is the client certificate validation that applies
// to listeners on port, with the field it is read from: that of its
// perPort entry, else the default; nil when none applies.
func frontendValidation(g *gw.Gateway, port gw.PortNumber) (*gw.FrontendTLSValidation, string) {
	if g.Spec.TLS == nil || g.Spec.TLS.Frontend == nil {
		return nil, ""
	}
	f := g.Spec.TLS.Frontend
	if i := slices.IndexFunc(f.PerPort, func(p gw.TLSPortConfig) bool { return p.Port == port }); i >= 0 {
		return f.PerPort[i].TLS.Validation, fmt.Sprintf("spec.tls.frontend.perPort[%d].tls.validation", i)
	}
	return f.Default.Validation, "spec.tls.frontend.default.validation"
}

// insecureFrontendValidation says, for the Gateway's
// InsecureFrontendValidationMode condition, where spec.tls.frontend allows
// clients without a certificate (AllowInsecureFallback, by default or on
// a port); nil when nowhere. The condition is gone once the mode is back
// to AllowValidOnly, as the specification asks.
func insecureFrontendValidation(g *gw.Gateway) *cond {
	if g.Spec.TLS == nil || g.Spec.TLS.Frontend == nil {
		return nil
	}
	f := g.Spec.TLS.Frontend
	var where []string
	if v := f.Default.Validation; v != nil && v.Mode == gw.AllowInsecureFallback {
		where = append(where, "spec.tls.frontend.default")
	}
	for i, p := range f.PerPort {
		if v := p.TLS.Validation; v != nil && v.Mode == gw.AllowInsecureFallback {
			where = append(where, fmt.Sprintf("spec.tls.frontend.perPort[%d] (port %d)", i, p.Port))
		}
	}
	if len(where) == 0 {
		return nil
	}
	return &cond{reason: string(gw.GatewayReasonConfigurationChanged),
		message: "AllowInsecureFallback in " + strings.Join(where, ", ") + ": clients without a valid certificate are let through"}
}

// frontendTLS applies the client certificate validation of Gateway g (its
// spec.tls, refs relative to its namespace) for listener l's port to l's
// terminating server s, and returns the annotations carrying the CA
// bundle for the generated Gateway. owner is the Gateway l's status is
// recorded on: g for its own listeners, a ListenerSet's stand-in for the
// set's (whose listeners g's validation applies to as well). ok is false
// when no CA ref is valid: the listener is then not served.
func (c *converter) frontendTLS(g, owner *gw.Gateway, l gw.Listener, s *networking.Server) (map[string]string, bool) {
	v, field := frontendValidation(g, l.Port)
	if v == nil || len(v.CACertificateRefs) == 0 || !terminates(l) || s.GetTls() == nil ||
		s.GetTls().GetMode() == networking.ServerTLSSettings_PASSTHROUGH {
		return nil, true
	}
	src := Source("Gateway", g)
	var names, bundles []string
	var first *cond
	for i, ref := range v.CACertificateRefs {
		f := fmt.Sprintf("%s.caCertificateRefs[%d]", field, i)
		name, bundle, why := c.clientCA(g, ref)
		if why != nil {
			c.errorf(src, f, "listener %s: %s", l.Name, why.message)
			if first == nil {
				first = why
			}
			continue
		}
		names, bundles = append(names, name), append(bundles, bundle)
	}
	if first != nil {
		c.st.listenerUnresolved(owner, l, gw.ListenerConditionReason(first.reason), "%s", first.message)
	}
	if len(names) == 0 {
		c.st.listenerNotAccepted(owner, l, gw.ListenerReasonNoValidCACertificate,
			"no caCertificateRef of %s is valid; the listener is not served rather than accept clients without a certificate", field)
		return nil, false
	}
	s.Tls.Mode = networking.ServerTLSSettings_MUTUAL
	if v.Mode == gw.AllowInsecureFallback {
		s.Tls.Mode = networking.ServerTLSSettings_OPTIONAL_MUTUAL
	}
	s.Tls.CaCertCredentialName = strings.Join(names, "+")
	return map[string]string{model.GatewayClientCAAnnotationPrefix + s.Tls.CaCertCredentialName: strings.Join(bundles, "")}, true
}

// clientCA resolves one caCertificateRef into its credential name and
// bundle, or says why not (a listener ResolvedRefs reason and message,
// naming the object and key, never its content).
func (c *converter) clientCA(g *gw.Gateway, ref gw.ObjectReference) (string, string, *cond) {
	kind := string(ref.Kind)
	ns := string(deref(ref.Namespace, gw.Namespace(g.Namespace)))
	name := string(ref.Name)
	if ref.Group != "" || (kind != "ConfigMap" && kind != "Secret") {
		return "", "", &cond{reason: string(gw.ListenerReasonInvalidCACertificateKind),
			message: fmt.Sprintf("caCertificateRef kind %s (group %q) is not supported (a ConfigMap or a Secret is)", kind, ref.Group)}
	}
	if ns != g.Namespace && !c.grants.allowed("Gateway", g.Namespace, "", kind, ns, name) {
		return "", "", &cond{reason: string(gw.ListenerReasonRefNotPermitted),
			message: fmt.Sprintf("%s %s/%s is in another namespace and no ReferenceGrant there allows it", kind, ns, name)}
	}
	invalid := func(format string, args ...any) (string, string, *cond) {
		return "", "", &cond{reason: string(gw.ListenerReasonInvalidCACertificateRef), message: fmt.Sprintf(format, args...)}
	}
	var data, scheme string
	switch kind {
	case "ConfigMap":
		scheme = model.ConfigMapCredentialPrefix
		c.st.referConfigMap(ns, name)
		if c.in.ConfigMaps == nil {
			return invalid("ConfigMap %s/%s does not exist", ns, name)
		}
		cm := c.in.ConfigMaps(ns, name)
		if cm == nil {
			return invalid("ConfigMap %s/%s does not exist", ns, name)
		}
		data = cm.Data["ca.crt"]
	case "Secret":
		scheme = model.KubernetesGatewaySecretPrefix
		c.st.referSecret(ns, name)
		if c.in.Secrets == nil {
			return invalid("Secret %s/%s does not exist", ns, name)
		}
		sec := c.in.Secrets(ns, name)
		if sec == nil {
			return invalid("Secret %s/%s does not exist", ns, name)
		}
		data = string(sec.Data["ca.crt"])
	}
	if data == "" {
		return invalid("%s %s/%s has no ca.crt", kind, ns, name)
	}
	bundle, err := parseCABundle(data)
	if err != nil {
		return invalid("%s %s/%s ca.crt: %v", kind, ns, name, err)
	}
	return scheme + ns + "/" + name + model.CASuffix, bundle, nil
}
