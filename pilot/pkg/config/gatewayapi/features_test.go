package gatewayapi_test

import (
	"slices"
	"testing"

	gw "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// Every handled GatewayClass lists gatewayapi.SupportedFeatures in
// status.supportedFeatures, sorted by name and without repeats as the
// specification asks, within the CRD's 64 entries; every name is one the
// Gateway API defines; a class of another controller gets nothing.
func TestGatewayClassSupportedFeatures(t *testing.T) {
	other := &gw.GatewayClass{Spec: gw.GatewayClassSpec{ControllerName: "example.com/other"}}
	other.Name = "other"
	res := gatewayapi.ConvertWithStatus(gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class, other}}, gatewayapi.Options{}, goldenNow)
	got := res.Status.GatewayClasses["wayfinder"].SupportedFeatures
	if len(got) == 0 || len(got) > 64 {
		t.Fatalf("%d supported features, want 1 to 64", len(got))
	}
	if !slices.IsSortedFunc(got, func(a, b gw.SupportedFeature) int { return compareStrings(string(a.Name), string(b.Name)) }) {
		t.Errorf("not sorted: %v", got)
	}
	known := map[features.FeatureName]bool{}
	for _, f := range features.AllFeatures.UnsortedList() {
		known[f.Name] = true
	}
	seen := map[gw.FeatureName]bool{}
	for _, f := range got {
		if seen[f.Name] {
			t.Errorf("%s listed twice", f.Name)
		}
		seen[f.Name] = true
		if !known[features.FeatureName(f.Name)] {
			t.Errorf("%s is not a Gateway API feature", f.Name)
		}
	}
	for _, f := range gatewayapi.SupportedFeatures {
		if !seen[gw.FeatureName(f)] {
			t.Errorf("%s missing from the status", f)
		}
	}
	// Not implemented, so never claimed.
	for _, f := range []features.FeatureName{features.SupportTLSRouteModeMixed, features.SupportGatewayStaticAddresses,
		features.SupportUDPRoute, features.SupportMesh, features.SupportHTTPRouteBackendRequestHeaderModification} {
		if seen[gw.FeatureName(f)] {
			t.Errorf("%s is claimed", f)
		}
	}
	if _, ok := res.Status.GatewayClasses["other"]; ok {
		t.Error("a class of another controller gets a status")
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
