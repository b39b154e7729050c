package grpcgen

import (
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// grpcRetryOn are the retry conditions gRPC clients act on: status codes.
// Envoy's HTTP conditions (5xx, connect-failure, ...) mean nothing to them.
var grpcRetryOn = map[string]bool{
	"cancelled": true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true,
}

// defaultGRPCRetryOn is the gRPC part of Istio's default retry conditions
// (connect-failure,refused-stream,unavailable,cancelled,...), used when a
// route sets attempts without retryOn.
const defaultGRPCRetryOn = "cancelled,unavailable"

// retryPolicy translates a route's retries. Without retries nothing is
// sent and gRPC does not retry: unlike Envoy sidecars, gRPC clients get no
// implicit retry policy, as in Istio's proxyless support. Attempts 0 means
// no retries; gRPC rejects num_retries 0, so no policy is sent.
func retryPolicy(vs *config.Config, in *networking.HTTPRetry, field string, r *reporter) (*routev3.RetryPolicy, bool) {
	if in == nil || in.GetAttempts() <= 0 {
		return nil, true
	}
	ok := true
	var conds []string
	if in.GetRetryOn() == "" {
		conds = strings.Split(defaultGRPCRetryOn, ",")
	}
	for part := range strings.SplitSeq(in.GetRetryOn(), ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case grpcRetryOn[part]:
			if !slices.Contains(conds, part) {
				conds = append(conds, part)
			}
		default:
			r.warnf(vs, field+".retryOn", "%q is not a gRPC status condition; gRPC clients ignore it", part)
		}
	}
	if len(conds) == 0 {
		r.warnf(vs, field+".retryOn", "no gRPC status condition (cancelled, deadline-exceeded, internal, resource-exhausted, unavailable); gRPC clients will not retry")
		return nil, true
	}
	out := &routev3.RetryPolicy{
		RetryOn:    strings.Join(conds, ","),
		NumRetries: wrapUInt32(uint32(in.GetAttempts())),
	}
	if d := in.GetPerTryTimeout(); d != nil {
		if d.AsDuration() <= 0 {
			r.errorf(vs, field+".perTryTimeout", "must be positive")
			ok = false
		} else {
			out.PerTryTimeout = durationOf(d.AsDuration())
			r.warnf(vs, field+".perTryTimeout", "sent, but gRPC-Go clients do not apply a per-try timeout; the route timeout bounds all attempts")
		}
	}
	if b := in.GetBackoff(); b != nil {
		if b.AsDuration() <= 0 {
			r.errorf(vs, field+".backoff", "must be positive")
			ok = false
		} else {
			// gRPC caps the backoff at 10x the base, as Envoy does.
			out.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationOf(b.AsDuration())}
		}
	}
	if in.GetRetryRemoteLocalities() != nil || in.GetRetryIgnorePreviousHosts() != nil {
		r.warnf(vs, field, "retryRemoteLocalities and retryIgnorePreviousHosts are not supported by gRPC clients; ignored")
	}
	return out, ok
}

// hashPolicyFor is the route hash policy of the destination's DestinationRule.
func hashPolicyFor(push *model.PushContext, d route.Destination) []*routev3.RouteAction_HashPolicy {
	return cluster.HashPolicy(push, d.Host, d.Subset, d.Port)
}

func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func wrapUInt32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }
