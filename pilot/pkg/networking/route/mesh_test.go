package route

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/nettest"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func meshVS() *config.Config {
	return &config.Config{Meta: config.Meta{Kind: schema.VirtualService, Name: "echo", Namespace: "default", Source: "vs.yaml"}}
}

func TestResolveDestinationForOtherGenerators(t *testing.T) {
	push := nettest.PushFromYAML(t, `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: echo
  namespace: default
spec:
  hosts: [echo.default.svc.cluster.local]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  resolution: STATIC
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: echo
  namespace: default
spec:
  host: echo.default.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}]
`)
	d, errs, ok := ResolveDestination(push, meshVS(), &networking.Destination{Host: "echo", Subset: "v1"}, "spec.http[0].route[0].destination")
	if !ok || len(errs) != 0 {
		t.Fatalf("ok=%v errs=%v", ok, errs)
	}
	want := Destination{Cluster: "outbound|7070|v1|echo.default.svc.cluster.local", Host: "echo.default.svc.cluster.local", Port: 7070, Subset: "v1"}
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
	_, errs, ok = ResolveDestination(push, meshVS(), &networking.Destination{Host: "echo", Subset: "v9"}, "f")
	if ok || len(errs) != 1 || errs[0].Field != "f.subset" || errs[0].Key.Name != "echo" {
		t.Errorf("unknown subset: ok=%v errs=%v", ok, errs)
	}
}

func TestTranslateMatchAndFaultForOtherGenerators(t *testing.T) {
	m, errs, ok := TranslateMatch(meshVS(), &networking.HTTPMatchRequest{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/pkg.Svc/"}}}, "spec.http[0].match[0]")
	if !ok || len(errs) != 0 || m.GetPrefix() != "/pkg.Svc/" || IsCatchAll(m) {
		t.Errorf("prefix match: %v %v %v", m, errs, ok)
	}
	m, _, ok = TranslateMatch(meshVS(), nil, "spec.http[0]")
	if !ok || !IsCatchAll(m) {
		t.Errorf("nil match should match everything: %v", m)
	}
	_, errs, ok = TranslateMatch(meshVS(), &networking.HTTPMatchRequest{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: "("}}}, "spec.http[0].match[0]")
	if ok || len(errs) != 1 {
		t.Errorf("bad regex: ok=%v errs=%v", ok, errs)
	}
	f, errs, ok := TranslateFault(meshVS(), &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{
		ErrorType:  &networking.HTTPFaultInjection_Abort_GrpcStatus{GrpcStatus: "UNAVAILABLE"},
		Percentage: &networking.Percent{Value: 25},
	}}, "spec.http[0].fault")
	if !ok || len(errs) != 0 || f.GetAbort().GetGrpcStatus() != 14 || f.GetAbort().GetPercentage().GetNumerator() != 250000 {
		t.Errorf("fault: %v %v %v", f, errs, ok)
	}
}
