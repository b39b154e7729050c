package authn

import (
	"os"
	"path/filepath"
	"testing"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	"google.golang.org/protobuf/encoding/protojson"
	securityv1beta1 "istio.io/api/security/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
)

// FuzzBuild: any RequestAuthentication spec builds without a panic into a
// filter that passes Envoy's validation, whatever its fields hold.
func FuzzBuild(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var c caseInput
		if err := yaml.Unmarshal(data, &c); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		for _, p := range c.Policies {
			f.Add([]byte(p.Spec))
		}
	}
	f.Add([]byte(`{"jwtRules":[{"issuer":"","fromHeaders":[{"name":"\u0000"}],"outputPayloadToHeader":"bad header"}]}`))
	f.Fuzz(func(t *testing.T, spec []byte) {
		s := &securityv1beta1.RequestAuthentication{}
		if protojson.Unmarshal(spec, s) != nil {
			return
		}
		in := Input{
			Proxy:    policyattach.Proxy{Namespace: "ns", GatewayName: "gw"},
			JWKS:     fakeResolver{},
			Routes:   []policyattach.RouteRef{{Kind: policyattach.HTTPRoute, Namespace: "ns", Name: "r"}},
			Policies: []RequestAuthentication{{Name: "p", Namespace: "ns", Spec: s}},
		}
		r := Build(in)
		for _, fl := range r.Filters {
			cfg := &jwtv3.JwtAuthentication{}
			if err := fl.GetTypedConfig().UnmarshalTo(cfg); err != nil {
				t.Fatal(err)
			}
			if err := cfg.ValidateAll(); err != nil {
				t.Fatalf("invalid jwt_authn config for %s: %v", spec, err)
			}
		}
	})
}
