package endpoint

import (
	"strconv"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/nettest"
)

// pushFrom indexes YAML documents without validating them, so tests can
// feed the translator what validation would normally stop.
func pushFrom(t testing.TB, docs string) *model.PushContext {
	t.Helper()
	return nettest.PushFromYAML(t, docs)
}

func addrs(loc *endpointv3.LocalityLbEndpoints) []string {
	var out []string
	for _, ep := range loc.GetLbEndpoints() {
		a := ep.GetEndpoint().GetAddress()
		if p := a.GetPipe(); p != nil {
			out = append(out, "unix:"+p.GetPath())
			continue
		}
		s := a.GetSocketAddress().GetAddress() + ":" + strconv.FormatUint(uint64(a.GetSocketAddress().GetPortValue()), 10)
		if w := ep.GetLoadBalancingWeight(); w != nil {
			s += "*" + strconv.FormatUint(uint64(w.GetValue()), 10)
		}
		out = append(out, s)
	}
	return out
}

const services = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pay, namespace: shop}
spec:
  hosts: [pay.example.com]
  ports:
  - {number: 80, name: http, protocol: HTTP, targetPort: 8080}
  - {number: 9000, name: grpc, protocol: GRPC}
  resolution: STATIC
  endpoints:
  - {address: 10.0.0.3, locality: us/us-b, labels: {v: "2"}, weight: 3}
  - {address: 10.0.0.1, locality: us/us-b, labels: {v: "1"}, ports: {http: 18080}}
  - {address: 10.0.0.2, locality: eu/eu-a/rack1, labels: {v: "1"}}
  - {address: 10.0.0.4, labels: {v: "2"}}
  - {address: "unix:///run/pay.sock", labels: {v: "3"}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: pay, namespace: shop}
spec:
  host: pay.example.com
  subsets:
  - {name: v1, labels: {v: "1"}}
  - {name: v2, labels: {v: "2"}, trafficPolicy: {loadBalancer: {simple: PASSTHROUGH}}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns, namespace: shop}
spec:
  hosts: [dns.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
  endpoints: [{address: a.example.com}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: none, namespace: shop}
spec:
  hosts: [none.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: NONE
`

func TestBuildEndpoints(t *testing.T) {
	cla, errs := BuildEndpoints(pushFrom(t, services))
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	var names []string
	byName := map[string]*endpointv3.ClusterLoadAssignment{}
	for _, c := range cla {
		if err := c.ValidateAll(); err != nil {
			t.Errorf("%s: %v", c.ClusterName, err)
		}
		names = append(names, c.ClusterName)
		byName[c.ClusterName] = c
	}
	// DNS and NONE services have no EDS clusters, nor does the PASSTHROUGH subset.
	want := "outbound|80|v1|pay.example.com outbound|80||pay.example.com outbound|9000|v1|pay.example.com outbound|9000||pay.example.com"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("assignments\n got %s\nwant %s", got, want)
	}

	all := byName["outbound|80||pay.example.com"].GetEndpoints()
	if len(all) != 3 {
		t.Fatalf("%d localities, want 3 (none, eu, us)", len(all))
	}
	if all[0].GetLocality() != nil || strings.Join(addrs(all[0]), " ") != "10.0.0.4:8080 unix:/run/pay.sock" {
		t.Errorf("unnamed locality: %v %v", all[0].GetLocality(), addrs(all[0]))
	}
	if l := all[1].GetLocality(); l.GetRegion() != "eu" || l.GetZone() != "eu-a" || l.GetSubZone() != "rack1" || strings.Join(addrs(all[1]), " ") != "10.0.0.2:8080" {
		t.Errorf("eu locality: %v %v", l, addrs(all[1]))
	}
	// Sorted by address; the per-name port override and the weight kept.
	if l := all[2].GetLocality(); l.GetRegion() != "us" || l.GetZone() != "us-b" || strings.Join(addrs(all[2]), " ") != "10.0.0.1:18080 10.0.0.3:8080*3" {
		t.Errorf("us locality: %v %v", l, addrs(all[2]))
	}

	v1 := byName["outbound|9000|v1|pay.example.com"].GetEndpoints()
	var got []string
	for _, l := range v1 {
		got = append(got, addrs(l)...)
	}
	if strings.Join(got, " ") != "10.0.0.2:9000 10.0.0.1:9000" {
		t.Errorf("subset v1 on port 9000: %v", got)
	}
}

func TestNonIPEndpointIsSkippedAndReportedOnce(t *testing.T) {
	cla, errs := BuildEndpoints(pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: bad, namespace: default}
spec:
  hosts: [bad.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}, {number: 81, name: http2, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.1}, {address: backend.example.com}]
`))
	if len(cla) != 2 {
		t.Fatalf("%d assignments, want 2", len(cla))
	}
	for _, c := range cla {
		if got := addrs(c.GetEndpoints()[0]); len(c.GetEndpoints()) != 1 || len(got) != 1 || !strings.HasPrefix(got[0], "10.0.0.1:") {
			t.Errorf("%s: %v", c.ClusterName, got)
		}
	}
	if len(errs) != 1 || errs[0].Key.Name != "bad" || errs[0].Field != "spec.endpoints" || !strings.Contains(errs[0].Message, `"backend.example.com"`) {
		t.Errorf("errors %v, want one naming backend.example.com", errs)
	}
}

func TestLocality(t *testing.T) {
	if Locality("") != nil {
		t.Error("empty locality must be nil")
	}
	l := Locality("r")
	if l.GetRegion() != "r" || l.GetZone() != "" || l.GetSubZone() != "" {
		t.Errorf("region only: %v", l)
	}
	l = Locality("r/z/s/extra")
	if l.GetRegion() != "r" || l.GetZone() != "z" || l.GetSubZone() != "s/extra" {
		t.Errorf("full: %v", l)
	}
}

func TestAddress(t *testing.T) {
	cases := []struct {
		host string
		dns  bool
		ok   bool
	}{
		{"10.1.2.3", false, true},
		{"::1", false, true},
		{"example.com", false, false},
		{"example.com", true, true},
		{"unix:///tmp/s", false, true},
		{"unix://", false, false},
		{"", true, false},
	}
	for _, c := range cases {
		a, ok := Address(c.host, 80, c.dns)
		if ok != c.ok {
			t.Errorf("Address(%q, dns=%v) ok = %v, want %v", c.host, c.dns, ok, c.ok)
			continue
		}
		if ok {
			if err := a.ValidateAll(); err != nil {
				t.Errorf("Address(%q): %v", c.host, err)
			}
		}
	}
}
