package policyattach

import (
	"testing"

	telemetryv1 "istio.io/api/telemetry/v1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// Cases from istiod's WorkloadPolicyMatcher.ShouldAttachPolicy for a
// gateway that is not a waypoint.
func TestSelects(t *testing.T) {
	ingress := Proxy{Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	gwAPI := Proxy{Namespace: "edge", Labels: map[string]string{GatewayNameLabel: "public", "app": "edge"}}
	sel := func(l map[string]string) *telemetryv1.Telemetry {
		return &telemetryv1.Telemetry{Selector: &typev1beta1.WorkloadSelector{MatchLabels: l}}
	}
	ref := func(group, kind, name, ns string) *telemetryv1.Telemetry {
		return &telemetryv1.Telemetry{TargetRefs: []*typev1beta1.PolicyTargetReference{{Group: group, Kind: kind, Name: name, Namespace: ns}}}
	}
	legacy := &telemetryv1.Telemetry{TargetRef: &typev1beta1.PolicyTargetReference{Group: GatewayAPIGroup, Kind: "Gateway", Name: "public"}}
	for _, c := range []struct {
		name   string
		p      Proxy
		ns     string
		spec   *telemetryv1.Telemetry
		want   bool
		nsWide bool
	}{
		{"empty selector selects by labels", ingress, "istio-system", &telemetryv1.Telemetry{}, true, true},
		{"matching selector", ingress, "istio-system", sel(map[string]string{"istio": "ingressgateway"}), true, false},
		{"selector with a label the proxy lacks", ingress, "istio-system", sel(map[string]string{"istio": "ingressgateway", "x": "y"}), false, false},
		{"targetRefs never select a non Gateway API proxy", ingress, "istio-system", ref(GatewayAPIGroup, "Gateway", "public", ""), false, false},
		{"selector on a Gateway API gateway without targetRefs", gwAPI, "edge", sel(map[string]string{"app": "edge"}), true, false},
		{"targetRef to its Gateway", gwAPI, "edge", ref(GatewayAPIGroup, "Gateway", "public", ""), true, false},
		{"legacy targetRef", gwAPI, "edge", legacy, true, false},
		{"targetRef to its Gateway, namespace given", gwAPI, "edge", ref(GatewayAPIGroup, "Gateway", "public", "edge"), true, false},
		{"targetRef naming another namespace", gwAPI, "edge", ref(GatewayAPIGroup, "Gateway", "public", "other"), false, false},
		{"policy of another namespace", gwAPI, "other", ref(GatewayAPIGroup, "Gateway", "public", ""), false, false},
		{"targetRef to another Gateway", gwAPI, "edge", ref(GatewayAPIGroup, "Gateway", "private", ""), false, false},
		{"targetRef to a GatewayClass (waypoints only)", gwAPI, "edge", ref(GatewayAPIGroup, "GatewayClass", "public", ""), false, false},
		{"targetRef to a Service", gwAPI, "edge", ref("", "Service", "public", ""), false, false},
	} {
		if got := Selects(c.p, c.ns, c.spec); got != c.want {
			t.Errorf("%s: Selects = %v, want %v", c.name, got, c.want)
		}
		if got := NamespaceWide(c.spec); got != c.nsWide {
			t.Errorf("%s: NamespaceWide = %v, want %v", c.name, got, c.nsWide)
		}
	}
	if name, ok := (Proxy{GatewayName: "set"}).GatewayAPIName(); !ok || name != "set" {
		t.Errorf("GatewayName given: %q %v", name, ok)
	}
}
