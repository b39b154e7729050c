package gatewayapi

import (
	"fmt"

	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// parametersValid checks a Gateway's spec.infrastructure.parametersRef as
// istiod 1.29 reads it (deploymentcontroller.go fetchParameters, and the
// ConfigMap lookup that follows it): the only kind taken is a ConfigMap
// (core group) of the Gateway's own namespace, and it must exist. Any
// other kind, or a ConfigMap that does not exist, rejects the Gateway
// with Accepted False, reason InvalidParameters, as the specification
// asks (istiod 1.29 fails the deployment instead and reports nothing):
// none of its listeners is served. Without a ConfigMaps lookup
// (Input.ConfigMaps nil) only the kind is checked.
//
// The ConfigMap's data is not applied: Wayfinder's deployer
// (gatewaydeploy) takes no parameters, which a warning says.
//
// GatewayClass parametersRef is not checked: istiod 1.29 does not read
// it either, and Wayfinder's GatewayClasses take no parameters.
func (c *converter) parametersValid(g *gw.Gateway) bool {
	if g.Spec.Infrastructure == nil || g.Spec.Infrastructure.ParametersRef == nil {
		return true
	}
	ref := g.Spec.Infrastructure.ParametersRef
	src, field := Source("Gateway", g), "spec.infrastructure.parametersRef"
	reject := func(format string, args ...any) bool {
		msg := fmt.Sprintf(format, args...)
		c.errorf(src, field, "%s (InvalidParameters); Gateway not served", msg)
		c.st.rejectGateway(g, string(gw.GatewayReasonInvalidParameters), msg)
		return false
	}
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		kind := string(ref.Kind)
		if ref.Group != "" {
			kind += "." + string(ref.Group)
		}
		return reject("parametersRef kind %s is not supported (only a ConfigMap is)", kind)
	}
	c.st.referConfigMap(g.Namespace, ref.Name)
	if c.in.ConfigMaps != nil && c.in.ConfigMaps(g.Namespace, ref.Name) == nil {
		return reject("parametersRef ConfigMap %s/%s does not exist", g.Namespace, ref.Name)
	}
	c.warnf(src, field, "ConfigMap %s/%s is accepted, but its data is not applied: Wayfinder's deployer takes no parameters", g.Namespace, ref.Name)
	return true
}

// rejectGateway records that Gateway g is not accepted as a whole.
func (r *recorder) rejectGateway(g *gw.Gateway, reason, message string) {
	if r.rejected == nil {
		r.rejected = map[string]*cond{}
	}
	r.rejected[g.Namespace+"/"+g.Name] = &cond{reason: reason, message: message}
}
