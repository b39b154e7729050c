package gatewayapi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// certificateProblem checks, as istiod 1.29's buildSecretReference does
// (kubecreds.ExtractCertInfo, then tls.X509KeyPair), that Secret ns/name
// holds a certificate a listener can serve: it exists, is of type
// kubernetes.io/tls or Opaque, holds a certificate and key under the keys
// the SDS server reads (tls.crt and tls.key, or Istio's cert and key:
// model.TLSKeyPair), both PEM, and the key is the certificate's. It
// returns "" when it does, else why not.
//
// The answer never quotes the Secret's data, nor an error of the parsers
// that might: key material must not reach a status, an error or a log.
//
// Without a Secrets lookup (Input.Secrets nil: file mode, which serves no
// Secrets) nothing is checked and every reference counts as resolved.
func (c *converter) certificateProblem(ns, name string) string {
	if c.in.Secrets == nil {
		return ""
	}
	s := c.in.Secrets(ns, name)
	if s == nil {
		return fmt.Sprintf("Secret %s/%s does not exist", ns, name)
	}
	return servingSecretProblem(s)
}

// servingSecretProblem is certificateProblem for a Secret at hand.
func servingSecretProblem(s *corev1.Secret) string {
	where := "Secret " + s.Namespace + "/" + s.Name
	switch s.Type {
	case corev1.SecretTypeTLS, corev1.SecretTypeOpaque, "":
	default:
		return fmt.Sprintf("%s is of type %s, not %s or %s", where, s.Type, corev1.SecretTypeTLS, corev1.SecretTypeOpaque)
	}
	cert, key, ok := model.TLSKeyPair(s.Data)
	if !ok {
		return where + " holds no certificate and key (tls.crt and tls.key)"
	}
	if !hasPEMBlock(cert, "CERTIFICATE") {
		return where + ": tls.crt holds no PEM certificate"
	}
	if _, err := x509.ParseCertificate(firstPEM(cert, "CERTIFICATE")); err != nil {
		return where + ": tls.crt does not parse as an X.509 certificate"
	}
	if !hasPEMBlock(key, "") {
		return where + ": tls.key holds no PEM private key"
	}
	// X509KeyPair parses the key and compares it with the certificate's
	// public key; its error is not quoted (see above).
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return where + ": tls.key is not a usable private key for the certificate in tls.crt"
	}
	return ""
}

// hasPEMBlock reports whether data holds a PEM block of type typ (any
// type when typ is "").
func hasPEMBlock(data []byte, typ string) bool {
	return firstPEM(data, typ) != nil
}

// firstPEM is the DER bytes of the first PEM block of type typ (any type
// when typ is "") in data; nil when there is none.
func firstPEM(data []byte, typ string) []byte {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil
		}
		if typ == "" || b.Type == typ {
			return b.Bytes
		}
	}
}

// certificateUsable resolves listener l's certificateRef (field f) to
// Secret ns/name and records its referral (Referenced); when the Secret
// cannot be served it reports the listener's ResolvedRefs False with
// InvalidCertificateRef, as the specification asks, and the listener is
// not served (Programmed False) while routes may still attach to it
// (holdUnresolved).
func (c *converter) certificateUsable(g *gw.Gateway, l gw.Listener, f, ns, name string) bool {
	c.st.referSecret(ns, name)
	p := c.certificateProblem(ns, name)
	if p == "" {
		return true
	}
	c.errorf(Source("Gateway", g), f, "%s (InvalidCertificateRef); listener not served", p)
	c.st.listenerUnresolved(g, l, gw.ListenerReasonInvalidCertificateRef, "%s", p)
	return false
}

// holdUnresolved keeps a listener that was accepted but not served
// because a reference did not resolve (ResolvedRefs False, Accepted
// True) as one routes attach to: the Gateway API counts the routes
// attached to such a listener (attachedRoutes) and reports them Accepted,
// as istiod does, though nothing of theirs is served there.
func (c *converter) holdUnresolved(g *gw.Gateway, l gw.Listener, rec *listenerRec) {
	if rec.accepted != nil || rec.resolved == nil {
		return
	}
	key := g.Namespace + "/" + g.Name
	c.listeners[key] = append(c.listeners[key], &listener{gateway: g, spec: l, unserved: true,
		istioKey: g.Namespace + "/" + IstioGatewayName(g.Name, l.Name)})
}
