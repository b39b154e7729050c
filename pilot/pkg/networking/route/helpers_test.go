package route

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// fixtures are services and subsets most tests route to.
const fixtures = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.cluster.local]
  ports: [{number: 9080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ratings, namespace: default}
spec:
  hosts: [ratings.default.svc.cluster.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.2}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: multi, namespace: default}
spec:
  hosts: [multi.default.svc.cluster.local]
  ports: [{number: 80, name: http, protocol: HTTP}, {number: 8080, name: http-alt, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.3}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews.default.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
`

// gatewayYAML is a Gateway "default/gw" serving every host on port 80.
const gatewayYAML = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
`

// build parses docs, translates every Gateway's routes and checks what
// every test needs: each RouteConfiguration passes ValidateAll, and
// translating the same input again gives equal output and errors.
func build(t *testing.T, docs ...string) ([]*routev3.RouteConfiguration, []*config.Error) {
	t.Helper()
	cfgs, perrs := manifest.Parse("test.yaml", []byte(strings.Join(docs, "\n---\n")), manifest.Options{})
	if len(perrs) > 0 {
		t.Fatalf("parse: %v", perrs)
	}
	run := func() ([]*routev3.RouteConfiguration, []*config.Error) {
		store := memory.New(cfgs)
		push := model.NewPushContext(store)
		return BuildGatewayRoutes(push, model.MergeGateways(push.Gateways()))
	}
	rcs, errs := run()
	for _, rc := range rcs {
		if err := rc.ValidateAll(); err != nil {
			t.Errorf("%s fails validation: %v", rc.GetName(), err)
		}
	}
	rcs2, errs2 := run()
	if len(rcs) != len(rcs2) {
		t.Fatalf("second run gave %d route configs, first %d", len(rcs2), len(rcs))
	}
	for i := range rcs {
		if !proto.Equal(rcs[i], rcs2[i]) {
			t.Errorf("%s differs between two runs on the same input", rcs[i].GetName())
		}
	}
	if errString(errs) != errString(errs2) {
		t.Errorf("errors differ between runs:\n%s\n---\n%s", errString(errs), errString(errs2))
	}
	return rcs, errs
}

// buildOK is build for input that must translate without any error or warning.
func buildOK(t *testing.T, docs ...string) []*routev3.RouteConfiguration {
	t.Helper()
	rcs, errs := build(t, docs...)
	if len(errs) > 0 {
		t.Fatalf("unexpected errors:\n%s", errString(errs))
	}
	return rcs
}

func errString(errs []*config.Error) string {
	var b strings.Builder
	for _, e := range errs {
		if e.Warning {
			b.WriteString("warning: ")
		}
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

// vs wraps HTTP routes (YAML, indented two spaces under spec) into a
// VirtualService "default/name" bound to gw for hosts.
func vs(name, hosts, http string) string {
	return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ` + name + `, namespace: default}
spec:
  hosts: ` + hosts + `
  gateways: [gw]
  http:
` + http
}

func routeConfig(t *testing.T, rcs []*routev3.RouteConfiguration, name string) *routev3.RouteConfiguration {
	t.Helper()
	for _, rc := range rcs {
		if rc.GetName() == name {
			return rc
		}
	}
	t.Fatalf("no route configuration %s among %d", name, len(rcs))
	return nil
}

func vhost(t *testing.T, rc *routev3.RouteConfiguration, name string) *routev3.VirtualHost {
	t.Helper()
	for _, vh := range rc.GetVirtualHosts() {
		if vh.GetName() == name {
			return vh
		}
	}
	t.Fatalf("%s has no virtual host %s; has %v", rc.GetName(), name, vhostNames(rc))
	return nil
}

func vhostNames(rc *routev3.RouteConfiguration) []string {
	var out []string
	for _, vh := range rc.GetVirtualHosts() {
		out = append(out, vh.GetName())
	}
	return out
}

func routeNames(vh *routev3.VirtualHost) []string {
	var out []string
	for _, r := range vh.GetRoutes() {
		out = append(out, r.GetName())
	}
	return out
}

// onlyRoute returns the single route of the single virtual host of http.80.
func onlyRoute(t *testing.T, rcs []*routev3.RouteConfiguration) *routev3.Route {
	t.Helper()
	rc := routeConfig(t, rcs, "http.80")
	if len(rc.GetVirtualHosts()) != 1 || len(rc.GetVirtualHosts()[0].GetRoutes()) != 1 {
		t.Fatalf("want one virtual host with one route, got %v", rc)
	}
	return rc.GetVirtualHosts()[0].GetRoutes()[0]
}

// unpack decodes a typed per-filter config.
func unpack[T proto.Message](t *testing.T, a *anypb.Any, m T) T {
	t.Helper()
	if a == nil {
		t.Fatalf("no config of type %T", m)
	}
	if err := a.UnmarshalTo(m); err != nil {
		t.Fatalf("unpack %s: %v", a.GetTypeUrl(), err)
	}
	return m
}

// hasError reports whether errs holds an error (or warning) on field whose
// message contains msg.
func hasError(errs []*config.Error, warning bool, field, msg string) bool {
	return slices.ContainsFunc(errs, func(e *config.Error) bool {
		return e.Warning == warning && e.Field == field && strings.Contains(e.Message, msg)
	})
}

func protoEqual(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}
