package grpc_test

import (
	"strconv"
	"testing"
)

// TestDNSServiceEntry: a DNS ServiceEntry becomes a LOGICAL_DNS cluster,
// which gRPC resolves itself; "localhost" reaches the loopback backend.
func TestDNSServiceEntry(t *testing.T) {
	a := startBackend(t, "a", nil)
	e := newEnv(t, map[string]string{"se.yaml": `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: echo
  namespace: default
spec:
  hosts:
  - ` + host + `
  location: MESH_EXTERNAL
  ports:
  - number: ` + strconv.Itoa(port) + `
    name: grpc
    protocol: GRPC
  resolution: DNS
  endpoints:
  - address: localhost
    ports:
      grpc: ` + strconv.Itoa(a.port) + `
`})
	_, c := e.client("dns")
	for range 10 {
		if name, err := call(c); err != nil || name != "a" {
			t.Fatalf("answered %q, err %v; want a", name, err)
		}
	}
}
