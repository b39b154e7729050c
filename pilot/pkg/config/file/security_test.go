package file

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	security "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// RequestAuthentications and AuthorizationPolicies in a folder, at
// security.istio.io v1 and v1beta1, are read and checked by the real
// validator: the valid ones are served with their annotations, the
// invalid one is reported with its file and field and not served.
func TestSecurityKindsInFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"jwt.yaml": `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: edge}
spec:
  jwtRules: [{issuer: "https://issuer.example.com", jwksUri: "https://issuer.example.com/jwks.json"}]
---
apiVersion: security.istio.io/v1beta1
kind: RequestAuthentication
metadata: {name: jwt-old, namespace: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: public}]
  jwtRules: [{issuer: "https://old.example.com"}]
`,
		"policies/authz.yaml": `apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata: {name: allow, namespace: edge, annotations: {istio.io/dry-run: "true"}}
spec:
  action: ALLOW
  rules: [{from: [{source: {remoteIpBlocks: [203.0.113.0/24]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny, namespace: edge}
spec:
  action: DENY
  rules: [{to: [{operation: {paths: ["/admin/{**}"]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: bad, namespace: edge}
spec:
  rules: [{when: [{key: request.method, values: [GET]}]}]
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(c.List(schema.RequestAuthentication, "")), []string{"RequestAuthentication edge/jwt", "RequestAuthentication edge/jwt-old"}; !slices.Equal(got, want) {
		t.Fatalf("List(RequestAuthentication) = %q, want %q", got, want)
	}
	if got, want := keysOf(c.List(schema.AuthorizationPolicy, "edge")), []string{"AuthorizationPolicy edge/allow", "AuthorizationPolicy edge/deny"}; !slices.Equal(got, want) {
		t.Fatalf("List(AuthorizationPolicy) = %q, want %q", got, want)
	}
	allow := c.Get(schema.AuthorizationPolicy, "edge", "allow")
	if spec, ok := allow.Spec.(*security.AuthorizationPolicy); !ok || allow.Annotations["istio.io/dry-run"] != "true" ||
		spec.GetRules()[0].GetFrom()[0].GetSource().GetRemoteIpBlocks()[0] != "203.0.113.0/24" {
		t.Fatalf("allow = %v %v", allow.Annotations, allow.Spec)
	}
	old := c.Get(schema.RequestAuthentication, "edge", "jwt-old")
	if spec, ok := old.Spec.(*security.RequestAuthentication); !ok || spec.GetTargetRefs()[0].GetName() != "public" {
		t.Fatalf("jwt-old = %v", old.Spec)
	}
	errs := c.ConfigErrors()
	if len(errs) != 1 || errs[0].Key.String() != "AuthorizationPolicy edge/bad" || errs[0].Field != "spec.rules[0].when[0].key" ||
		errs[0].Source == "" {
		t.Fatalf("ConfigErrors = %v, want the bad policy's when key", errs)
	}
	if s := errs[0].Error(); !strings.Contains(s, "policies/authz.yaml") {
		t.Errorf("error %q does not name its file", s)
	}
}
