package analysis

import (
	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// telemetryKind is how Telemetries reach gateways: a selector Telemetry
// applies only to proxies of its own namespace (the root namespace's
// apply mesh-wide only when namespace-wide), and it cannot target routes.
var telemetryKind = policyKind{name: "Telemetry"}

// telemetryTargets warns about Telemetry objects that select no gateway
// (policyTargets).
func telemetryTargets(push *model.PushContext) []*config.Error {
	var out []*config.Error
	for _, c := range push.Telemetries() {
		spec, ok := c.Spec.(*telemetryv1.Telemetry)
		if !ok {
			continue
		}
		out = append(out, policyTargets(push, nil, telemetryKind, c, spec)...)
	}
	return out
}
