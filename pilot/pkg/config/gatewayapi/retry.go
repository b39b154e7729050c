package gatewayapi

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// connectionRetryOn is what istiod 1.29 retries on whenever a rule has a
// retry stanza, before the rule's codes: the Gateway API says
// implementations SHOULD retry on connection errors then.
var connectionRetryOn = []string{"connect-failure", "refused-stream", "unavailable", "cancelled"}

// defaultRetryAttempts is istiod's when retry.attempts is unset: Istio's
// default number of retries.
const defaultRetryAttempts = 2

// retries converts a rule's retry stanza into Istio retries as istiod
// 1.29's convertHTTPRoute does: connection errors plus the rule's codes,
// attempts (2 unset; 0, which older CRDs allowed, disables retries and
// names no condition), and backoff as the base interval of Envoy's
// exponential back-off (Istio's HTTPRetry.backoff; the route translator
// writes Envoy's retry_back_off, whose max interval is ten times it). A
// backoff that cannot be read is reported and left to Envoy's default
// (25ms), the rest of the stanza served.
func (c *converter) retries(src string, r *gw.HTTPRouteRetry, field string) *networking.HTTPRetry {
	if r == nil {
		return nil
	}
	on := append([]string(nil), connectionRetryOn...)
	for i, code := range r.Codes {
		if code < 400 || code > 599 {
			// The CRD bounds codes to 400-599; Envoy retries on no other.
			c.errorf(src, field+".codes["+strconv.Itoa(i)+"]", "%d is not an HTTP status code from 400 to 599; code left out", code)
			continue
		}
		on = append(on, strconv.Itoa(int(code)))
	}
	attempts := deref(r.Attempts, defaultRetryAttempts)
	switch {
	case attempts < 0:
		c.errorf(src, field+".attempts", "%d is negative; the default of %d applies", attempts, defaultRetryAttempts)
		attempts = defaultRetryAttempts
	case attempts > 1<<20:
		c.errorf(src, field+".attempts", "%d is more retries than make sense; capped to %d", attempts, 1<<20)
		attempts = 1 << 20
	}
	out := &networking.HTTPRetry{Attempts: int32(attempts), RetryOn: strings.Join(on, ",")}
	if attempts == 0 {
		// Istio refuses conditions without attempts.
		out.RetryOn = ""
	}
	if r.Backoff != nil {
		d, err := parseDuration(string(*r.Backoff))
		switch {
		case err != nil:
			c.errorf(src, field+".backoff", "%v; Envoy's default back-off applies", err)
		case d%minIstioDuration != 0:
			c.errorf(src, field+".backoff", "duration %s is not a whole number of milliseconds; Envoy's default back-off applies", strconv.Quote(string(*r.Backoff)))
		case d > 0 && attempts > 0:
			out.Backoff = durationpb.New(d)
		}
	}
	return out
}

// timeouts sets a rule's timeouts on its Istio route as istiod 1.29 does:
// request is the route timeout; backendRequest is the per-try timeout when
// the rule retries, and otherwise the route timeout itself (the CRD keeps
// it no longer than request), so each attempt's time is bounded either way.
func (c *converter) timeouts(src string, t *gw.HTTPRouteTimeouts, out *networking.HTTPRoute, field string) {
	if t == nil {
		return
	}
	if t.Request != nil {
		if d, ok := c.timeout(src, string(*t.Request), field+".request"); ok && d > 0 {
			out.Timeout = durationpb.New(d)
		}
	}
	if t.BackendRequest != nil {
		d, ok := c.timeout(src, string(*t.BackendRequest), field+".backendRequest")
		if !ok || d == 0 {
			return
		}
		if out.Retries != nil && out.Retries.Attempts > 0 {
			out.Retries.PerTryTimeout = durationpb.New(d)
			return
		}
		out.Timeout = durationpb.New(d)
	}
}

// minIstioDuration is the granularity of Istio's durations (and the
// Gateway API's): a whole number of milliseconds.
const minIstioDuration = time.Millisecond

// timeout reads one of a rule's timeouts, or reports why it is ignored
// (not a duration, or not whole milliseconds, which the CRD's pattern
// rules out but the Go types do not).
func (c *converter) timeout(src, s, field string) (time.Duration, bool) {
	d, err := parseDuration(s)
	if err == nil && d%minIstioDuration != 0 {
		err = fmt.Errorf("duration %s is not a whole number of milliseconds", strconv.Quote(s))
	}
	if err != nil {
		c.errorf(src, field, "%v; ignored", err)
		return 0, false
	}
	return d, true
}
