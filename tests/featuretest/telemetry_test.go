package featuretest

import (
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

const telemetryYAML = `
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: mesh-default, namespace: istio-system}
spec:
  accessLogging: [{providers: [{name: envoy}]}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: bad-sampling, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  tracing: [{providers: [{name: zipkin}], randomSamplingPercentage: 140}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: after-telemetry, namespace: default}
spec:
  hosts: [after.example.com]
  gateways: [istio-system/public]
  http:
  - route: [{destination: {host: reviews.default.svc.cluster.local, subset: v2}}]
`

// A folder with a valid and an invalid Telemetry: the valid one is read
// and listed in configz, the invalid one is skipped with an error naming
// its file, object and field (in configz's errors and its per-object
// status), and everything else in the folder is still served; the valid
// one's access logging reaches the gateway.
func TestTelemetryReadValidatedReported(t *testing.T) {
	e := newEnv(t, baseFiles())
	c := e.gateway("gw-1", publicLabels, nil)
	before := waitFor(t, c, "initial", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	e.write("telemetry.yaml", telemetryYAML)
	s := waitFor(t, c, "the VirtualService beside the Telemetries", func(s adsc.State) bool {
		return allACKed(s) && slices.Contains(domains(s, "http.80"), "after.example.com")
	})
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Error("unrelated routes lost")
	}
	// The valid Telemetry names the built-in envoy provider: the gateway's
	// connection manager logs to /dev/stdout (istiod's
	// FileAccessLogFromMeshConfig).
	if s.Version(adsc.ListenerType) == before.Version(adsc.ListenerType) || fileLogPath(s) != "/dev/stdout" {
		t.Error("the gateway's connection manager has no /dev/stdout access logger from the Telemetry")
	}

	// The push that carried the VirtualService read the same folder scan.
	cz := e.configz()
	if !slices.ContainsFunc(cz.Configs, func(o debugapi.ConfigzObject) bool {
		return o.Kind == "Telemetry" && o.Namespace == "istio-system" && o.Name == "mesh-default"
	}) {
		t.Errorf("the valid Telemetry is not in configz: %+v", cz.Configs)
	}
	if slices.ContainsFunc(cz.Configs, func(o debugapi.ConfigzObject) bool { return o.Name == "bad-sampling" }) {
		t.Error("the invalid Telemetry is served")
	}
	if !slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
		return ce.Origin == "source" && ce.Kind == "Telemetry" && ce.Name == "bad-sampling" &&
			ce.Field == "spec.tracing[0].randomSamplingPercentage" && strings.Contains(ce.Source, "telemetry.yaml (document 2)")
	}) {
		t.Errorf("no error naming file, object and field: %+v", cz.Errors)
	}
	i := slices.IndexFunc(cz.Status, func(st debugapi.ConfigzStatus) bool {
		return st.Kind == "Telemetry" && st.Namespace == "istio-system" && st.Name == "bad-sampling"
	})
	if i < 0 || len(cz.Status[i].Errors) != 1 || cz.Status[i].Errors[0].Field != "spec.tracing[0].randomSamplingPercentage" {
		t.Errorf("per-object status of the invalid Telemetry: %+v", cz.Status)
	}

	// Fixing the sampling serves it and clears that error. Its provider,
	// zipkin, is not in this mesh config: as istiod, that is no validation
	// error but a translation one, reported against the provider's field
	// once the push has read the Telemetry.
	e.write("telemetry.yaml", strings.Replace(telemetryYAML, "randomSamplingPercentage: 140", "randomSamplingPercentage: 40", 1))
	poll.Until(t, "fixed Telemetry served, its unknown provider reported", func() bool {
		cz := e.configz()
		return slices.ContainsFunc(cz.Configs, func(o debugapi.ConfigzObject) bool { return o.Name == "bad-sampling" }) &&
			!slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
				return ce.Name == "bad-sampling" && ce.Field == "spec.tracing[0].randomSamplingPercentage"
			}) &&
			slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
				return ce.Name == "bad-sampling" && ce.Field == "spec.tracing[0].providers[0].name"
			})
	})
}
