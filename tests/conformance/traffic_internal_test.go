package conformance

import (
	"net/url"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// A request ends the subtest that makes it as skipped, is recorded under
// its conformance test, and the gated test is then reported as skipped;
// a test that makes no request is left as it ran.
func TestTrafficGateStopsAtTheFirstRequest(t *testing.T) {
	g := newTrafficGate()
	var after bool
	withRequest := gated(suite.ConformanceTest{ShortName: "WithRequest", Test: func(t *testing.T, _ *suite.ConformanceTestSuite) {
		t.Run("request", func(t *testing.T) {
			_, _, _ = g.CaptureRoundTrip(roundtripper.Request{T: t, Protocol: "HTTP", Method: "GET", URL: url.URL{Scheme: "http", Host: "127.20.0.1", Path: "/"}})
			after = true
		})
	}}, g)
	statusOnly := gated(suite.ConformanceTest{ShortName: "StatusOnly", Test: func(*testing.T, *suite.ConformanceTestSuite) {}}, g)

	var skipped, passed bool
	t.Run("WithRequest", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		withRequest.Test(t, nil)
	})
	t.Run("StatusOnly", func(t *testing.T) {
		defer func() { passed = !t.Skipped() && !t.Failed() }()
		statusOnly.Test(t, nil)
	})
	if after {
		t.Error("the subtest went on after its request")
	}
	if !skipped {
		t.Error("a test stopped at its request is not reported as skipped")
	}
	if !passed {
		t.Error("a test without requests is not reported as passed")
	}
	if first, ok := g.firstRequest("WithRequest"); !ok || first != "HTTP GET http://127.20.0.1/" {
		t.Errorf("first request of WithRequest = %q, %v", first, ok)
	}
	if got := g.cut(); len(got) != 1 || got[0] != "WithRequest" {
		t.Errorf("cut = %v", got)
	}
}
