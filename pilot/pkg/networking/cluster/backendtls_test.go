package cluster

import (
	"strings"
	"testing"
)

// The credentialName forms of BackendTLSPolicy rules: invalid:// (no
// valid CA) builds no cluster; configmap:// is served only with the CA
// its rule carries, inline; a rule naming one without the CA (written by
// hand) builds no cluster either. Never plaintext, never unverified.
func TestBackendTLSCredentialForms(t *testing.T) {
	cs, errs := build(t, join(se("ext", "bad.example.com, nocarried.example.com", "DNS", ""),
		dr("bad", "bad.example.com", "  trafficPolicy: {tls: {mode: SIMPLE, credentialName: \"invalid://\", sni: bad.example.com}}"),
		dr("nocarried", "nocarried.example.com", "  trafficPolicy: {tls: {mode: SIMPLE, credentialName: \"configmap://default/ca\"}}")))
	for name := range cs {
		if strings.Contains(name, "bad.example.com") || strings.Contains(name, "nocarried.example.com") {
			t.Errorf("cluster %s built", name)
		}
	}
	var invalid, uncarried bool
	for _, e := range errs {
		invalid = invalid || strings.Contains(e.Message, "has no valid CA certificate")
		uncarried = uncarried || strings.Contains(e.Message, "only DestinationRules generated from a BackendTLSPolicy")
	}
	if !invalid || !uncarried {
		t.Errorf("errors %v, want both forms reported", errs)
	}
}
