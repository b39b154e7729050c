package route

import (
	"net/http"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	previousprioritiesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// Istio's retry defaults (istiod 1.29, pilot/pkg/networking/core/route/
// retry/retry.go), applied when a route sets no retries and used as the base
// a route's retries override. The default names no HTTP status code: a 503
// from the upstream is not retried unless the VirtualService asks, so a
// non-idempotent request is not replayed after the upstream handled it.
const (
	defaultRetryAttempts = 2
	defaultRetryOn       = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
	// hostSelectionRetries is how often Envoy re-picks a host the retry
	// predicate rejected before giving up and using it anyway.
	hostSelectionRetries = 5
	previousHostsName    = "envoy.retry_host_predicates.previous_hosts"
	previousPrioName     = "envoy.retry_priorities.previous_priorities"
)

// retryConditions are the retry_on values Envoy accepts for HTTP routes;
// Envoy rejects the whole route configuration for any other.
var retryConditions = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true, "connect-failure": true,
	"envoy-ratelimited": true, "retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true,
	"retriable-headers": true, "http3-post-connect-failure": true,
	// gRPC conditions.
	"cancelled": true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true,
}

func previousHostsPredicate() *routev3.RetryPolicy_RetryHostPredicate {
	a, _ := protoconv.ValidatedAny(&previoushostsv3.PreviousHostsPredicate{})
	return &routev3.RetryPolicy_RetryHostPredicate{
		Name:       previousHostsName,
		ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: a},
	}
}

// defaultRetryPolicy is Istio's: two retries on connection failures,
// refused streams and gRPC unavailable/cancelled, preferring hosts not yet
// tried. "retriable-status-codes" is in the list as in istiod, but with no
// codes listed only a request's x-envoy-retriable-status-codes header can
// name any.
func defaultRetryPolicy() *routev3.RetryPolicy {
	return &routev3.RetryPolicy{
		NumRetries:                    wrapperspb.UInt32(defaultRetryAttempts),
		RetryOn:                       defaultRetryOn,
		RetryHostPredicate:            []*routev3.RetryPolicy_RetryHostPredicate{sharedPreviousHosts},
		HostSelectionRetryMaxAttempts: hostSelectionRetries,
	}
}

// The policies of routes that set no retries, shared by every such route:
// translation output is only marshaled, never edited, and most routes set
// none (their copies were 4 MB of a gateway's routes at 5,000 services).
var (
	sharedPreviousHosts = previousHostsPredicate()
	sharedDefaultRetry  = defaultRetryPolicy()
	// sharedHashRetry is the default for a consistent-hash destination.
	sharedHashRetry = func() *routev3.RetryPolicy {
		rp := defaultRetryPolicy()
		rp.RetryHostPredicate = nil
		return rp
	}()
)

// translateRetries returns the route's retry policy: the default when in is
// nil, none when attempts is 0 (istiod: "explicitly disabling"), otherwise
// the default with in's overrides. A route timeout does not change it: as in
// istiod, the timeout bounds all attempts together.
// For a consistent-hash destination retries go back to the hashed host
// unless the route asks otherwise: the default prefers other hosts.
func translateRetries(in *networking.HTTPRetry, consistentHash bool, field string, p *problems) *routev3.RetryPolicy {
	if in == nil {
		if consistentHash {
			return sharedHashRetry
		}
		return sharedDefaultRetry
	}
	out := defaultRetryPolicy()
	if consistentHash {
		out.RetryHostPredicate = nil
	}
	if in.GetAttempts() <= 0 {
		return nil
	}
	out.NumRetries = wrapperspb.UInt32(uint32(in.GetAttempts()))
	if in.GetRetryOn() != "" {
		out.RetryOn, out.RetriableStatusCodes = parseRetryOn(in.GetRetryOn(), field+".retryOn", p)
		if len(out.RetriableStatusCodes) > 0 && !strings.Contains(out.RetryOn, "retriable-status-codes") {
			out.RetryOn = strings.TrimPrefix(out.RetryOn+",retriable-status-codes", ",")
		}
	}
	if d := in.GetPerTryTimeout(); d != nil {
		if d.AsDuration() <= 0 {
			p.errorf(field+".perTryTimeout", "must be positive")
		}
		out.PerTryTimeout = d
	}
	if v := in.GetRetryIgnorePreviousHosts(); v != nil {
		out.RetryHostPredicate = nil
		if v.GetValue() {
			out.RetryHostPredicate = []*routev3.RetryPolicy_RetryHostPredicate{sharedPreviousHosts}
		}
	}
	if in.GetRetryRemoteLocalities().GetValue() {
		a, _ := protoconv.ValidatedAny(&previousprioritiesv3.PreviousPrioritiesConfig{UpdateFrequency: 2})
		out.RetryPriority = &routev3.RetryPolicy_RetryPriority{
			Name:       previousPrioName,
			ConfigType: &routev3.RetryPolicy_RetryPriority_TypedConfig{TypedConfig: a},
		}
	}
	if b := in.GetBackoff(); b != nil {
		if b.AsDuration() <= 0 {
			p.errorf(field+".backoff", "must be positive")
		}
		out.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: b}
	}
	return sharedRetries.get(out)
}

// parseRetryOn splits retryOn into Envoy conditions and HTTP status codes
// ("5xx,503" retries on 5xx and on 503).
func parseRetryOn(s, field string, p *problems) (string, []uint32) {
	var conds []string
	var codes []uint32
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.Atoi(part); err == nil {
			if http.StatusText(n) == "" {
				p.errorf(field, "%d is not an HTTP status code", n)
				continue
			}
			codes = append(codes, uint32(n))
			continue
		}
		if !retryConditions[part] {
			p.errorf(field, "unknown retry condition %q", part)
			continue
		}
		conds = append(conds, part)
	}
	return strings.Join(conds, ","), codes
}
