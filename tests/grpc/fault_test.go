package grpc_test

import (
	"context"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const faultVS = echoVSHead + `  - name: abort-half
    match:
    - headers:
        x-fault:
          exact: abort-half
    fault:
      abort:
        grpcStatus: PERMISSION_DENIED
        percentage:
          value: 50
    route:
    - destination:
        host: echo
  - name: abort-http
    match:
    - headers:
        x-fault:
          exact: abort-http
    fault:
      abort:
        httpStatus: 404
        percentage:
          value: 100
    route:
    - destination:
        host: echo
  - name: delay
    match:
    - headers:
        x-fault:
          exact: delay
    fault:
      delay:
        fixedDelay: 10s
        percentage:
          value: 100
    route:
    - destination:
        host: echo
  - name: slow
    match:
    - headers:
        x-fault:
          exact: timeout
    timeout: 300ms
    route:
    - destination:
        host: echo
  - route:
    - destination:
        host: echo
`

func TestFaultAbort(t *testing.T) {
	a := startBackend(t, "a", nil)
	e := newEnv(t, map[string]string{"se.yaml": serviceEntry(a), "vs.yaml": faultVS})
	_, c := e.client("fault")

	t.Run("grpcStatus for the configured share", func(t *testing.T) {
		// Aborted RPCs are Binomial(1000, 0.5): sd 15.8 RPCs (1.58%); ±7%
		// is 4.4 sd, failing a correct injection with probability ~1e-5.
		const n = 1000
		aborted := 0
		for range n {
			name, err := call(c, "x-fault", "abort-half")
			switch status.Code(err) {
			case codes.OK:
				if name != "a" {
					t.Fatalf("answered by %q", name)
				}
			case codes.PermissionDenied:
				aborted++
			default:
				t.Fatalf("RPC failed with %v, want OK or PermissionDenied", err)
			}
		}
		share := float64(aborted) / n
		t.Logf("abort 50%%: %d of %d aborted (%.1f%%)", aborted, n, 100*share)
		if math.Abs(share-0.5) > 0.07 {
			t.Errorf("aborted share %.3f outside 0.50±0.07", share)
		}
	})
	t.Run("httpStatus maps to its gRPC code", func(t *testing.T) {
		for range 20 {
			_, err := call(c, "x-fault", "abort-http")
			if status.Code(err) != codes.Unimplemented { // HTTP 404 -> UNIMPLEMENTED
				t.Fatalf("got %v, want Unimplemented", err)
			}
		}
	})
	t.Run("unfaulted route answers", func(t *testing.T) {
		if name, err := call(c); err != nil || name != "a" {
			t.Fatalf("answered by %q, err %v", name, err)
		}
	})
}

func TestFaultDelayAndTimeout(t *testing.T) {
	a := startBackend(t, "a", nil)
	e := newEnv(t, map[string]string{"se.yaml": serviceEntry(a), "vs.yaml": faultVS})
	_, c := e.client("delay")
	if _, err := call(c); err != nil { // config is in
		t.Fatal(err)
	}

	t.Run("delay outlasts the caller's deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-fault", "delay"), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("took %v: the 10s delay was not cut by the deadline", took)
		}
	})
	t.Run("route timeout cuts a slow backend", func(t *testing.T) {
		// The caller allows 5s; the route's 300ms timeout must fire first.
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-fault", "timeout", delayHeader, "10000"), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{})
		took := time.Since(start)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
		if took > 4*time.Second {
			t.Errorf("took %v: the route timeout did not apply, the caller's deadline did", took)
		}
	})
	t.Run("a fast backend beats the route timeout", func(t *testing.T) {
		name, err := call(c, "x-fault", "timeout", delayHeader, "1")
		if err != nil || name != "a" {
			t.Fatalf("answered by %q, err %v", name, err)
		}
	})
}
