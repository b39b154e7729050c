package manifest

import (
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
)

func TestGoDurationsAccepted(t *testing.T) {
	cs, errs := Parse("d.yaml", []byte(`
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: d}
spec:
  hosts: [a.example.com]
  http:
  - timeout: 1m30s
    retries: {attempts: 2, perTryTimeout: 250ms}
    fault: {delay: {fixedDelay: 1.5s, percentage: {value: 10}}}
    route: [{destination: {host: a}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d}
spec:
  host: a
  trafficPolicy:
    connectionPool: {tcp: {connectTimeout: 30ms}}
    portLevelSettings:
    - port: {number: 80}
      outlierDetection: {interval: 2m, baseEjectionTime: 0.5s}
`), Options{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	http := cs[0].Spec.(*networking.VirtualService).GetHttp()[0]
	if got := http.GetTimeout().AsDuration(); got != 90*time.Second {
		t.Errorf("timeout %v", got)
	}
	if got := http.GetRetries().GetPerTryTimeout().AsDuration(); got != 250*time.Millisecond {
		t.Errorf("perTryTimeout %v", got)
	}
	if got := http.GetFault().GetDelay().GetFixedDelay().AsDuration(); got != 1500*time.Millisecond {
		t.Errorf("fixedDelay %v", got)
	}
	tp := cs[1].Spec.(*networking.DestinationRule).GetTrafficPolicy()
	if got := tp.GetConnectionPool().GetTcp().GetConnectTimeout().AsDuration(); got != 30*time.Millisecond {
		t.Errorf("connectTimeout %v", got)
	}
	if got := tp.GetPortLevelSettings()[0].GetOutlierDetection().GetInterval().AsDuration(); got != 2*time.Minute {
		t.Errorf("interval in a list %v", got)
	}
}

func TestBadDurationNamesField(t *testing.T) {
	_, errs := Parse("d.yaml", []byte(`
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: d}
spec:
  hosts: [a.example.com]
  http: [{timeout: soon, route: [{destination: {host: a}}]}]
`), Options{})
	if len(errs) != 1 || errs[0].Source != "d.yaml (document 1)" || errs[0].Key.Name != "d" {
		t.Fatalf("errors %v", errs)
	}
	if errs[0].Field != "spec.http[0].timeout" || !contains(errs[0].Message, `"soon"`) {
		t.Errorf("error should name the field: %v", errs[0])
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
