package grpc_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

func itoa(i int) string { return strconv.Itoa(i) }

// matchVS routes by metadata and by method path: x-version: v2 goes to
// subset v2, CacheableUnaryCall (an exact method path) to subset v3, any
// other TestService method (a path prefix) to subset v1.
const matchVS = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: echo
  namespace: default
spec:
  hosts:
  - echo.default.svc.cluster.local
  http:
  - name: by-header
    match:
    - headers:
        x-version:
          exact: v2
    route:
    - destination:
        host: echo
        subset: v2
  - name: by-method
    match:
    - uri:
        exact: /grpc.testing.TestService/CacheableUnaryCall
    route:
    - destination:
        host: echo
        subset: v3
  - name: by-service
    match:
    - uri:
        prefix: /grpc.testing.TestService/
    route:
    - destination:
        host: echo
        subset: v1
`

func TestHeaderAndPathMatches(t *testing.T) {
	a1 := startBackend(t, "a1", map[string]string{"version": "v1"})
	a2 := startBackend(t, "a2", map[string]string{"version": "v1"})
	b := startBackend(t, "b", map[string]string{"version": "v2"})
	c3 := startBackend(t, "c", map[string]string{"version": "v3"})
	e := newEnv(t, map[string]string{
		"se.yaml": serviceEntry(a1, a2, b, c3),
		"dr.yaml": subsetsRule("v1", "v2", "v3"),
		"vs.yaml": matchVS,
	})
	_, c := e.client("matches")

	t.Run("header match picks v2", func(t *testing.T) {
		for range 50 {
			name, err := call(c, "x-version", "v2")
			if err != nil || name != "b" {
				t.Fatalf("x-version: v2 answered by %q (err %v), want b", name, err)
			}
		}
	})
	t.Run("exact method path picks v3", func(t *testing.T) {
		for range 50 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := c.CacheableUnaryCall(ctx, &testpb.SimpleRequest{})
			cancel()
			if err != nil || r.GetHostname() != "c" {
				t.Fatalf("CacheableUnaryCall answered by %q (err %v), want c", r.GetHostname(), err)
			}
		}
	})
	t.Run("path prefix picks only v1's endpoints", func(t *testing.T) {
		// Subset v1 selects a1 and a2 by label. Round robin uses a backend
		// once its connection is up, so RPCs go on until both have
		// answered; none may come from another subset.
		seen := rpcsUntilAll(t, c, "a1", "a2")
		if len(seen) != 2 {
			t.Errorf("subset v1 answered by %v, want a1 and a2 only", seen)
		}
	})
	t.Run("a header value that does not match falls through", func(t *testing.T) {
		name, err := call(c, "x-version", "v9")
		if err != nil || (name != "a1" && name != "a2") {
			t.Errorf("x-version: v9 answered by %q (err %v), want a v1 backend", name, err)
		}
	})
}

// TestDefaultRouteWithoutVirtualService: with no VirtualService the
// service's default cluster takes every endpoint.
func TestDefaultRouteWithoutVirtualService(t *testing.T) {
	a := startBackend(t, "a", map[string]string{"version": "v1"})
	b := startBackend(t, "b", map[string]string{"version": "v2"})
	e := newEnv(t, map[string]string{"se.yaml": serviceEntry(a, b)})
	_, c := e.client("default")
	seen := rpcsUntilAll(t, c, "a", "b")
	if len(seen) != 2 {
		t.Errorf("default route answered by %v, want a and b only", seen)
	}
}

// rpcsUntilAll makes RPCs until every one of names has answered (bounded
// by waitTimeout and 20,000 RPCs) and returns who answered how often.
func rpcsUntilAll(t *testing.T, c testpb.TestServiceClient, names ...string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	all := func() bool {
		for _, n := range names {
			if seen[n] == 0 {
				return false
			}
		}
		return true
	}
	poll.Seen(t, fmt.Sprintf("every backend of %v to answer", names), func() (string, bool) {
		name, err := call(c)
		if err != nil {
			t.Fatalf("RPC failed: %v", err)
		}
		seen[name]++
		return fmt.Sprint(seen), all()
	}, poll.Timeout(waitTimeout), poll.Tries(20000), poll.Interval(0))
	return seen
}
