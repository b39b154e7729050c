package grpc_test

import (
	"testing"
)

const hashRule = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: echo
  namespace: default
spec:
  host: echo.default.svc.cluster.local
  trafficPolicy:
    loadBalancer:
      consistentHash:
        httpHeaderName: x-user
`

// TestConsistentHashOnHeader: with consistentHash on a header the cluster
// is a ring hash and routes hash on that header, so every RPC of one user
// reaches the same backend, while different users spread over several.
func TestConsistentHashOnHeader(t *testing.T) {
	a := startBackend(t, "a", nil)
	b := startBackend(t, "b", nil)
	c3 := startBackend(t, "c", nil)
	e := newEnv(t, map[string]string{"se.yaml": serviceEntry(a, b, c3), "dr.yaml": hashRule})
	_, c := e.client("hash")

	used := map[string]bool{}
	for u := range 30 {
		user := "user-" + itoa(u)
		first := ""
		for i := range 10 {
			name, err := call(c, "x-user", user)
			if err != nil {
				t.Fatalf("RPC for %s failed: %v", user, err)
			}
			if i == 0 {
				first = name
			} else if name != first {
				t.Fatalf("%s went to %s, then to %s: not sticky", user, first, name)
			}
		}
		used[first] = true
	}
	// Three equal endpoints on a ring: 30 users all hashing to one
	// backend has probability about 3*(1/3)^30.
	if len(used) < 2 {
		t.Errorf("30 users all went to %v: the header is not hashed", used)
	}
}
