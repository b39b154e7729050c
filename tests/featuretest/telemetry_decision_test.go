package featuretest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/cli"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

const decisionYAML = `
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: mesh-default, namespace: istio-system}
spec:
  accessLogging: [{providers: [{name: envoy}]}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: public-tracing, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  tracing: [{providers: [{name: zipkn}]}]
`

// The Telemetry objects that apply to a gateway are attributed to it in
// their status (Gateways, ACKed), a provider the mesh config lacks is an
// error against the Telemetry field naming it (in configz and the
// object's status) while the rest is served, and /debug/adsz and
// `wayfinder proxy-config telemetry` show the decision in force.
func TestTelemetryDecisionAttributedAndShown(t *testing.T) {
	e := newEnv(t, baseFiles())
	e.write("telemetry.yaml", decisionYAML)
	c := e.gateway("gw-1", publicLabels, nil)
	s := waitFor(t, c, "the Telemetry's access logger", func(s adsc.State) bool {
		return allACKed(s) && fileLogPath(s) == "/dev/stdout"
	})
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Error("routes lost beside the Telemetry with an unknown provider")
	}

	status := func(cz debugapi.Configz, name string) (debugapi.ConfigzStatus, bool) {
		i := slices.IndexFunc(cz.Status, func(st debugapi.ConfigzStatus) bool {
			return st.Kind == "Telemetry" && st.Namespace == "istio-system" && st.Name == name
		})
		if i < 0 {
			return debugapi.ConfigzStatus{}, false
		}
		return cz.Status[i], true
	}
	const field = "spec.tracing[0].providers[0].name"
	poll.Until(t, "both Telemetries attributed to the ACKing gateway", func() bool {
		cz := e.configz()
		a, okA := status(cz, "mesh-default")
		b, okB := status(cz, "public-tracing")
		return okA && okB && a.Gateways == 1 && a.Acked == 1 && b.Gateways == 1 && b.Acked == 1
	})
	cz := e.configz()
	b, _ := status(cz, "public-tracing")
	if len(b.Errors) != 1 || b.Errors[0].Field != field || !strings.Contains(b.Errors[0].Message, `"zipkn" is not in the mesh config`) {
		t.Errorf("status of the Telemetry naming an unknown provider: %+v", b.Errors)
	}
	if !slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
		return ce.Kind == "Telemetry" && ce.Name == "public-tracing" && ce.Field == field && !ce.Warning
	}) {
		t.Errorf("configz errors do not name the Telemetry field: %+v", cz.Errors)
	}
	if a, _ := status(cz, "mesh-default"); len(a.Errors) != 0 {
		t.Errorf("the good Telemetry carries errors: %+v", a.Errors)
	}

	clients, err := cli.NewClients(cli.ClientOptions{Addrs: []string{e.server.HTTPAddr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cl, id, err := cli.ResolveProxy(ctx, clients, "gw-1.istio-system")
	if err != nil {
		t.Fatal(err)
	}
	tel, err := cli.FetchTelemetry(ctx, cl, id)
	if err != nil {
		t.Fatal(err)
	}
	if tel.Root != "istio-system/mesh-default" || !slices.Equal(tel.Workload, []string{"istio-system/public-tracing"}) {
		t.Errorf("decision levels: root %q workload %v", tel.Root, tel.Workload)
	}
	if len(tel.AccessLogs) != 1 || tel.AccessLogs[0].Provider != "envoy" || len(tel.Problems) != 1 {
		t.Errorf("decision: access logs %+v problems %q", tel.AccessLogs, tel.Problems)
	}
	var out bytes.Buffer
	if err := cli.WriteTelemetry(&out, tel, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"istio-system/mesh-default", "istio-system/public-tracing", "envoy", `"zipkn" is not in the mesh config`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("proxy-config telemetry table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := cli.WriteTelemetry(&out, tel, cli.OutputYAML); err != nil || !strings.Contains(out.String(), "root: istio-system/mesh-default") {
		t.Errorf("proxy-config telemetry -o yaml (%v):\n%s", err, out.String())
	}
}
