package status

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// A Gateway or GatewayClass that stops being Wayfinder's (its class now
// names another controller, or was deleted) must not keep the status
// Wayfinder wrote: the writer puts it back to the CRD's initial status,
// Unknown / Pending, for whichever controller comes next. Which status is
// Wayfinder's is told by its messages, which name the controller
// (gatewayapi.gatewayStatus, gatewayapi.ConvertWithStatus), since a Gateway's
// status has no controllerName field as a route's parents entries have.

// gatewayWasOurs reports whether a Gateway's Programmed condition was
// written by controller ctrl.
func gatewayWasOurs(g *gw.Gateway, ctrl gw.GatewayController) bool {
	for _, c := range g.Status.Conditions {
		if c.Type == string(gw.GatewayConditionProgrammed) && strings.HasPrefix(c.Message, string(ctrl)+": ") {
			return true
		}
	}
	return false
}

// classWasOurs reports whether a GatewayClass's Accepted condition was
// written by controller ctrl.
func classWasOurs(gc *gw.GatewayClass, ctrl gw.GatewayController) bool {
	for _, c := range gc.Status.Conditions {
		if c.Type == string(gw.GatewayClassConditionStatusAccepted) && c.Message == "handled by "+string(ctrl) {
			return true
		}
	}
	return false
}

// pendingConditions are the CRDs' default conditions: each type Unknown,
// reason Pending, "Waiting for controller". keepTimes keeps their time
// stable once written.
func pendingConditions(gen int64, types ...gw.GatewayClassConditionType) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(types))
	for _, t := range types {
		out = append(out, metav1.Condition{Type: string(t), Status: metav1.ConditionUnknown, Reason: string(gw.GatewayClassReasonPending),
			Message: "Waiting for controller", ObservedGeneration: gen, LastTransitionTime: metav1.Unix(0, 0)})
	}
	return out
}
