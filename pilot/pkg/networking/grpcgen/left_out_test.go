package grpcgen

import (
	"strings"
	"testing"
)

// A cluster gRPC clients cannot use (here: a DestinationRule asks for TLS)
// is left out with an error, and so are its endpoints: an assignment
// without its cluster is never sent. Found by FuzzTranslateGenerated
// (pilot/pkg/networking/core).
func TestLeftOutClusterLeavesNoEndpoints(t *testing.T) {
	res, errs := translate("left-out.yaml", []byte(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: backend, namespace: default}
spec:
  hosts: [backend.example.com]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: grpc, protocol: GRPC}]
  endpoints: [{address: 10.0.0.1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: backend, namespace: default}
spec:
  host: backend.example.com
  subsets: [{name: v1, labels: {version: v1}, trafficPolicy: {tls: {mode: SIMPLE}}}]
`))
	checkResources(t, res)
	clusters := map[string]bool{}
	for _, c := range res.Clusters {
		clusters[c.GetName()] = true
	}
	if !clusters["outbound|8080||backend.example.com"] || clusters["outbound|8080|v1|backend.example.com"] {
		t.Fatalf("clusters %v: want the default one and not subset v1's", clusters)
	}
	for _, e := range res.Endpoints {
		if !clusters[e.GetClusterName()] {
			t.Errorf("endpoints %s sent without their cluster", e.GetClusterName())
		}
	}
	if len(res.Endpoints) != 1 {
		t.Errorf("%d assignments, want 1 (the default cluster's)", len(res.Endpoints))
	}
	reported := false
	for _, e := range errs {
		reported = reported || strings.Contains(e.Error(), "outbound|8080|v1|backend.example.com is not sent")
	}
	if !reported {
		t.Errorf("no error names the subset's cluster left out: %v", errs)
	}
}
