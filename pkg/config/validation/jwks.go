package validation

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// parseJWKS checks inline jwks the way istiod's jwk.Parse (lestrrat-go/jwx
// v1) reads it: a JSON object that is either a key set ({"keys": [...]})
// or one key; every key has a kty istiod knows (RSA, EC, OKP, oct) and the
// members that kind requires, base64url (or base64) encoded. A set without
// keys parses, as in istiod. Nothing here checks that a key is usable for
// signatures: Envoy and the JWT translator decide that.
func parseJWKS(b []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	raw, ok := top["keys"]
	if !ok {
		return checkJWK(top)
	}
	var keys []json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("keys: want a list of keys: %v", err)
	}
	for i, k := range keys {
		var m map[string]json.RawMessage
		if bytes.Equal(bytes.TrimSpace(k), []byte("null")) {
			return fmt.Errorf("keys[%d]: key must not be null", i)
		}
		if err := json.Unmarshal(k, &m); err != nil {
			return fmt.Errorf("keys[%d]: not a JSON object: %v", i, err)
		}
		if err := checkJWK(m); err != nil {
			return fmt.Errorf("keys[%d]: %w", i, err)
		}
	}
	return nil
}

// jwkRequired are the members each key type requires (RFC 7518 section 6,
// RFC 8037 for OKP), all base64url values.
var jwkRequired = map[string][]string{
	"RSA": {"n", "e"},
	"EC":  {"crv", "x", "y"},
	"OKP": {"crv", "x"},
	"oct": {"k"},
}

func checkJWK(m map[string]json.RawMessage) error {
	var kty string
	if raw, ok := m["kty"]; !ok || json.Unmarshal(raw, &kty) != nil || kty == "" {
		return errors.New("kty (the key type) must be a non-empty string")
	}
	required, ok := jwkRequired[kty]
	if !ok {
		return fmt.Errorf("invalid key type %q: want RSA, EC, OKP or oct", kty)
	}
	for _, name := range required {
		raw, ok := m[name]
		if !ok {
			return fmt.Errorf("%s key: required field %s is missing", kty, name)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s == "" {
			return fmt.Errorf("%s key: field %s must be a non-empty string", kty, name)
		}
		if name == "crv" {
			continue
		}
		if !isBase64(s) {
			return fmt.Errorf("%s key: field %s is not base64url", kty, name)
		}
	}
	return nil
}

// isBase64 accepts base64url or standard base64, padded or not, as jwx's
// decoder does.
func isBase64(s string) bool {
	s = strings.TrimRight(s, "=")
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}
