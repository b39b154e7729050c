package schema

import (
	"strings"
	"testing"
)

func TestByAPIVersion(t *testing.T) {
	for _, v := range []string{"v1", "v1beta1", "v1alpha3"} {
		s, err := ByAPIVersion("networking.istio.io/"+v, "VirtualService")
		if err != nil || s.Kind != VirtualService {
			t.Errorf("%s: %v %v", v, s.Kind, err)
		}
	}
	for _, v := range []string{"v1", "v1alpha1"} {
		s, err := ByAPIVersion("telemetry.istio.io/"+v, "Telemetry")
		if err != nil || s.Kind != Telemetry {
			t.Errorf("telemetry %s: %v %v", v, s.Kind, err)
		}
	}
	for _, v := range []string{"v1", "v1beta1"} {
		for _, k := range []Kind{RequestAuthentication, AuthorizationPolicy} {
			s, err := ByAPIVersion("security.istio.io/"+v, k.String())
			if err != nil || s.Kind != k || s.Group != "security.istio.io" {
				t.Errorf("security %s %s: %v %v", v, k, s.Kind, err)
			}
		}
	}
	if s, err := ByAPIVersion("networking.istio.io/v1alpha3", "EnvoyFilter"); err != nil || s.Kind != EnvoyFilter || s.Plural != "envoyfilters" {
		t.Errorf("EnvoyFilter v1alpha3: %v %v", s.Kind, err)
	}
	if ByKind(AuthorizationPolicy).Plural != "authorizationpolicies" || ByKind(RequestAuthentication).Plural != "requestauthentications" {
		t.Error("security plurals differ from istiod's")
	}
	for _, tc := range []struct{ apiVersion, kind, want string }{
		{"networking.istio.io/v2", "Gateway", `version "v2" of Gateway is not supported`},
		{"telemetry.istio.io/v1beta1", "Telemetry", `version "v1beta1" of Telemetry is not supported`},
		{"networking.istio.io/v1", "Telemetry", `kind "Telemetry" in "networking.istio.io/v1"`},
		{"networking.istio.io", "Gateway", "want group/version"},
		{"apps/v1", "Deployment", `kind "Deployment"`},
		{"security.istio.io/v1", "Gateway", `kind "Gateway" in "security.istio.io/v1"`},
		{"security.istio.io/v1alpha1", "AuthorizationPolicy", `version "v1alpha1" of AuthorizationPolicy is not supported`},
		{"security.istio.io/v1", "PeerAuthentication", `kind "PeerAuthentication"`},
		{"networking.istio.io/v1", "EnvoyFilter", `version "v1" of EnvoyFilter is not supported (want one of v1alpha3)`},
	} {
		if _, err := ByAPIVersion(tc.apiVersion, tc.kind); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.apiVersion, tc.kind, err, tc.want)
		}
	}
}

func TestKindsDefinedOnce(t *testing.T) {
	seen := map[string]bool{}
	for i, s := range All() {
		if s.Kind != Kind(i+1) || ByKind(s.Kind).Name != s.Name || s.Kind.String() != s.Name {
			t.Errorf("schema %d out of order: %+v", i, s)
		}
		if k, ok := FromName(s.Name); !ok || k != s.Kind {
			t.Errorf("FromName(%s)", s.Name)
		}
		if seen[s.Plural] || s.NewSpec() == nil {
			t.Errorf("schema %s: duplicate plural or no spec", s.Name)
		}
		seen[s.Plural] = true
	}
	if len(Kinds()) != len(All()) {
		t.Error("Kinds and All disagree")
	}
	if Kind(0).String() != "Kind(0)" {
		t.Error("zero kind")
	}
}
