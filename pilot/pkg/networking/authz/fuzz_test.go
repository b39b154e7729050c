package authz

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	securityv1beta1 "istio.io/api/security/v1beta1"
)

// FuzzBuild follows istiod's FuzzBuildHTTP and FuzzBuildTCP: any policy
// spec, of any action and dry-run or not, must translate without a panic
// into filters that validate, inside their Anys too.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		`{"rules":[{"from":[{"source":{"ipBlocks":["10.0.0.0/8"],"requestPrincipals":["*"]}}],"to":[{"operation":{"paths":["/a/{*}"]}}]}]}`,
		`{"action":"DENY","rules":[{"when":[{"key":"request.auth.claims[a][b]","values":["x*"]}]}]}`,
		`{"action":"CUSTOM","provider":{"name":"p"},"rules":[{}]}`,
		`{"action":"AUDIT","rules":[{"to":[{"operation":{"hosts":["*.example.com"],"ports":["80"]}}]}]}`,
		`{"rules":[{"when":[{"key":"experimental.envoy.filters.a.b[c]","values":["[v]"]}]}]}`,
	} {
		f.Add(seed, false, "")
		f.Add(seed, true, "true")
	}
	f.Fuzz(func(t *testing.T, spec string, tcp bool, dryRun string) {
		s := &securityv1beta1.AuthorizationPolicy{}
		if protojson.Unmarshal([]byte(spec), s) != nil {
			t.Skip()
		}
		p := Policy{Name: "p", Namespace: "foo", Spec: s, Annotations: map[string]string{dryRunAnnotation: dryRun}}
		r := Build(Input{Policies: []Policy{p}, Proxy: gateway, TCP: tcp})
		checkResult(t, r)
	})
}
