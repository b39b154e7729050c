package validation

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// clientChecks checks what a server verifies client certificates against
// besides the CA: Envoy rejects a listener whose SPKI pin is not the
// base64 SHA-256 of a public key, or whose hash is not a hex SHA-256.
func (v *validator) clientChecks(f string, t *networking.ServerTLSSettings) {
	for i, san := range t.SubjectAltNames {
		if san == "" {
			v.add(at(f+".subjectAltNames", i), "subject alt name must not be empty")
		}
	}
	for i, pin := range t.VerifyCertificateSpki {
		if b, err := base64.StdEncoding.DecodeString(pin); err != nil || len(b) != 32 {
			v.add(at(f+".verifyCertificateSpki", i), "%q is not a base64-encoded SHA-256 hash (44 characters) of a certificate's public key", pin)
		}
	}
	for i, h := range t.VerifyCertificateHash {
		if b, err := hex.DecodeString(strings.ReplaceAll(h, ":", "")); err != nil || len(b) != 32 {
			v.add(at(f+".verifyCertificateHash", i), "%q is not a hex-encoded SHA-256 hash (64 hex digits, colons allowed) of a certificate", h)
		}
	}
}
