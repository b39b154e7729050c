package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// A Gateway held back by the deployer is Programmed False with its
// reason and message and has no address; the conversion's status it
// starts from (shared with /debug/configz) is left as it was.
func TestHeldStatus(t *testing.T) {
	ip := gw.IPAddressType
	computed := gw.GatewayStatus{
		Addresses: []gw.GatewayStatusAddress{{Type: &ip, Value: "10.0.0.1"}},
		Conditions: []metav1.Condition{
			{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 3},
			{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", Message: "ctrl: Service ns/edge-wf", ObservedGeneration: 3},
		},
	}
	got := heldStatus(computed, "NoResources", "ctrl: proxies not deployed")
	p := got.Conditions[1]
	if p.Status != metav1.ConditionFalse || p.Reason != "NoResources" || p.Message != "ctrl: proxies not deployed" || p.ObservedGeneration != 3 {
		t.Errorf("Programmed %+v", p)
	}
	if got.Conditions[0] != computed.Conditions[0] || len(got.Addresses) != 0 {
		t.Errorf("held status %+v", got)
	}
	if computed.Conditions[1].Status != metav1.ConditionTrue || len(computed.Addresses) != 1 {
		t.Errorf("the computed status was changed: %+v", computed)
	}
}
