package conformance

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	"sigs.k8s.io/gateway-api/conformance/utils/grpc"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// noProxy is why no request is sent: the suite would send it to the
// Gateway's address, where Envoy would listen; no kubelet runs Envoy here.
const noProxy = "needs traffic through a running proxy (no kubelet runs Envoy here)"

// errNoProxy is returned where a request has no test to stop.
var errNoProxy = errors.New("conformance: " + noProxy)

// trafficGate stands in for the suite's HTTP round tripper, gRPC client and
// WebSocket dialer. A request ends the (sub)test that makes it as skipped,
// and is recorded under its conformance test, which gated then reports as
// skipped after the status checks before its first request have run. It
// never dials: nothing leaves the process.
type trafficGate struct {
	mu    sync.Mutex
	first map[string]string // conformance test -> its first request
}

func newTrafficGate() *trafficGate { return &trafficGate{first: map[string]string{}} }

// stop records the request and skips t, the test on whose goroutine the
// suite's helpers make it.
func (g *trafficGate) stop(t *testing.T, what string) {
	name := conformanceTestOf(t.Name())
	g.mu.Lock()
	if _, ok := g.first[name]; !ok {
		g.first[name] = what
	}
	g.mu.Unlock()
	t.Skipf("not sent: %s: %s", what, noProxy)
}

// firstRequest is the first request test name made, if any.
func (g *trafficGate) firstRequest(name string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.first[name]
	return w, ok
}

// cut lists the tests stopped at a request, sorted.
func (g *trafficGate) cut() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for n := range g.first {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// conformanceTestOf is the conformance test's short name in a Go test
// name: TestConformance/<ShortName>/status/<subtest>...
func conformanceTestOf(goName string) string {
	parts := strings.Split(goName, "/")
	if len(parts) < 2 {
		return goName
	}
	return parts[1]
}

// CaptureRoundTrip implements roundtripper.RoundTripper.
func (g *trafficGate) CaptureRoundTrip(req roundtripper.Request) (*roundtripper.CapturedRequest, *roundtripper.CapturedResponse, error) {
	if req.T == nil {
		return nil, nil, errNoProxy
	}
	g.stop(req.T, strings.ToUpper(req.Protocol)+" "+req.Method+" "+req.URL.String())
	return nil, nil, errNoProxy // not reached: stop ends the test's goroutine
}

// SendRPC implements grpc.Client.
func (g *trafficGate) SendRPC(t *testing.T, address string, _ grpc.ExpectedResponse, _ time.Duration) (*grpc.Response, error) {
	g.stop(t, "gRPC "+address)
	return nil, errNoProxy
}

// Close implements grpc.Client.
func (g *trafficGate) Close() {}

// Dial implements websocket.Dialer. It has no test to stop, so the tests
// that dial are skipped by name (skips_test.go).
func (g *trafficGate) Dial(string, string, string) (*websocket.Conn, error) {
	return nil, errNoProxy
}

// gated wraps a conformance test so that it runs its body as subtest
// "status" and is reported as skipped when that body was stopped at a
// request (or skipped itself); status checks that failed before it still
// fail the test.
func gated(test suite.ConformanceTest, g *trafficGate) suite.ConformanceTest {
	body := test.Test
	test.Test = func(t *testing.T, s *suite.ConformanceTestSuite) {
		skipped := false
		t.Run("status", func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			body(t, s)
		})
		if t.Failed() {
			return
		}
		if first, ok := g.firstRequest(test.ShortName); ok {
			t.Skipf("status checks passed; stopped at its first request (%s): %s", first, noProxy)
		}
		if skipped {
			t.Skip("its body skipped itself")
		}
	}
	return test
}
