package route

import (
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// HTTP filters whose per-route config this package emits. The gateway's
// HTTP connection manager must include them (before the router) or the
// config is ignored.
const (
	FaultFilterName = wellknown.Fault // "envoy.filters.http.fault"
	CORSFilterName  = wellknown.CORS  // "envoy.filters.http.cors"
)

// percent converts an Istio percentage (0-100, fractional) to Envoy's
// per-million form.
func percent(p *networking.Percent) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{Numerator: uint32(p.GetValue() * 10000), Denominator: typev3.FractionalPercent_MILLION}
}

func wholePercent(n uint32) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{Numerator: n, Denominator: typev3.FractionalPercent_HUNDRED}
}

// grpcCodes maps gRPC status names to codes, for fault aborts.
var grpcCodes = map[string]uint32{
	"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5,
	"ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
	"ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14,
	"DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

// translateFault builds the fault filter's per-route config, or nil when
// nothing would be injected. A fault without a percentage injects into no
// request, as Istio documents; that is reported since it is rarely meant.
func translateFault(in *networking.HTTPFaultInjection, field string, p *problems) *faultv3.HTTPFault {
	out := &faultv3.HTTPFault{}
	if d := in.GetDelay(); d != nil {
		f := field + ".delay"
		out.Delay = &faultcommonv3.FaultDelay{}
		switch {
		case d.GetPercentage() != nil:
			out.Delay.Percentage = percent(d.GetPercentage())
		default:
			//nolint:staticcheck // the deprecated integer percent is still accepted by Istio.
			out.Delay.Percentage = wholePercent(uint32(max(d.GetPercent(), 0)))
			if d.GetPercent() == 0 { //nolint:staticcheck
				p.warnf(f+".percentage", "no percentage: no request will be delayed")
			}
		}
		switch t := d.GetHttpDelayType().(type) {
		case *networking.HTTPFaultInjection_Delay_FixedDelay:
			out.Delay.FaultDelaySecifier = &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: t.FixedDelay}
		default:
			p.errorf(f, "only fixedDelay is supported")
		}
	}
	if a := in.GetAbort(); a != nil {
		f := field + ".abort"
		out.Abort = &faultv3.FaultAbort{Percentage: wholePercent(0)}
		if a.GetPercentage() != nil {
			out.Abort.Percentage = percent(a.GetPercentage())
		} else {
			p.warnf(f+".percentage", "no percentage: no request will be aborted")
		}
		switch t := a.GetErrorType().(type) {
		case *networking.HTTPFaultInjection_Abort_HttpStatus:
			if t.HttpStatus < 200 || t.HttpStatus >= 600 {
				p.errorf(f+".httpStatus", "%d is not an HTTP status (200-599)", t.HttpStatus)
			}
			out.Abort.ErrorType = &faultv3.FaultAbort_HttpStatus{HttpStatus: uint32(t.HttpStatus)}
		case *networking.HTTPFaultInjection_Abort_GrpcStatus:
			code, ok := grpcCodes[strings.ToUpper(t.GrpcStatus)]
			if !ok {
				n, err := strconv.ParseUint(t.GrpcStatus, 10, 32)
				if err != nil || n > 16 {
					p.errorf(f+".grpcStatus", "unknown gRPC status %q", t.GrpcStatus)
				}
				code = uint32(n)
			}
			out.Abort.ErrorType = &faultv3.FaultAbort_GrpcStatus{GrpcStatus: code}
		default:
			p.errorf(f, "one of httpStatus or grpcStatus is required")
		}
	}
	if out.Delay == nil && out.Abort == nil {
		return nil
	}
	return out
}

// translateCORS builds the CORS filter's per-route config.
func translateCORS(in *networking.CorsPolicy, field string, p *problems) *corsv3.CorsPolicy {
	out := &corsv3.CorsPolicy{
		AllowMethods:     strings.Join(in.GetAllowMethods(), ","),
		AllowHeaders:     strings.Join(in.GetAllowHeaders(), ","),
		ExposeHeaders:    strings.Join(in.GetExposeHeaders(), ","),
		AllowCredentials: in.GetAllowCredentials(),
		FilterEnabled:    &corev3.RuntimeFractionalPercent{DefaultValue: wholePercent(100)},
		// Forwarding preflights no origin matched is Istio's default
		// (and Envoy's before 1.30); IGNORE turns it off.
		ForwardNotMatchingPreflights: wrapperspb.Bool(in.GetUnmatchedPreflights() != networking.CorsPolicy_IGNORE),
	}
	if in.GetMaxAge() != nil {
		out.MaxAge = strconv.FormatInt(in.GetMaxAge().GetSeconds(), 10)
	}
	if len(in.GetAllowOrigins()) > 0 {
		for i, o := range in.GetAllowOrigins() {
			f := field + ".allowOrigins[" + strconv.Itoa(i) + "]"
			sm := stringMatcher(o, f, p)
			if sm == nil {
				p.errorf(f, "an origin match needs exact, prefix or regex")
				continue
			}
			out.AllowOriginStringMatch = append(out.AllowOriginStringMatch, sm)
		}
	} else {
		//nolint:staticcheck // allowOrigin is deprecated but still honoured, as exact matches.
		for _, o := range in.GetAllowOrigin() {
			out.AllowOriginStringMatch = append(out.AllowOriginStringMatch,
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o}})
		}
	}
	return out
}
