package grpc_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
)

// allTo routes every RPC to one subset.
func allTo(subset string) string {
	return echoVSHead + `  - route:
    - destination:
        host: echo
        subset: ` + subset + `
`
}

// TestRouteChangeReachesRunningClient rewrites the VirtualService while
// RPCs run back to back on one ClientConn: the new route takes over on that
// same channel, and no RPC fails before, during or after the change.
func TestRouteChangeReachesRunningClient(t *testing.T) {
	a := startBackend(t, "a", map[string]string{"version": "v1"})
	b := startBackend(t, "b", map[string]string{"version": "v2"})
	e := newEnv(t, map[string]string{
		"se.yaml": serviceEntry(a, b),
		"dr.yaml": subsetsRule("v1", "v2"),
		"vs.yaml": allTo("v1"),
	})
	cc, c := e.client("update")
	waitUntil(t, "v1 route", func() (string, error) { return call(c) }, func(n string, err error) bool { return err == nil && n == "a" })

	var got counter
	oldAfterSwitch := 0 // v1 answers after v2 first answered
	switched := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		afterSwitch := 0
		// Bounded: at most 50,000 RPCs or 30s, and 200 RPCs past the switch.
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; i < 50000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			name, err := call(c)
			got.add(name, err)
			if name == "a" && afterSwitch > 0 {
				oldAfterSwitch++
			}
			if name == "b" {
				if afterSwitch == 0 {
					close(switched)
				}
				afterSwitch++
				if afterSwitch == 200 {
					return
				}
			}
		}
	}()

	e.write("vs.yaml", allTo("v2"))
	select {
	case <-switched:
	case <-time.After(waitTimeout):
		close(stop)
	}
	<-done

	got.mu.Lock()
	defer got.mu.Unlock()
	t.Logf("RPCs during the change: %v, errors %d", got.byName, len(got.errs))
	if len(got.errs) > 0 {
		t.Errorf("%d RPCs failed during the route change; first: %v", len(got.errs), got.errs[0])
	}
	if got.byName["b"] < 200 {
		t.Fatalf("the new route did not take over: %v", got.byName)
	}
	if s := cc.GetState(); s != connectivity.Ready {
		t.Errorf("channel state %v after the change, want READY", s)
	}
	if oldAfterSwitch > 0 {
		t.Errorf("v1 answered %d RPCs after v2 took over", oldAfterSwitch)
	}
	if name, err := call(c); err != nil || name != "b" {
		t.Errorf("after the change answered by %q (err %v), want b", name, err)
	}
}
