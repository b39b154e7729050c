package route

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestFault(t *testing.T) {
	million := func(n uint32) *typev3.FractionalPercent {
		return &typev3.FractionalPercent{Numerator: n, Denominator: typev3.FractionalPercent_MILLION}
	}
	cases := []struct {
		name, fault string
		want        *faultv3.HTTPFault
	}{
		{"fixed delay", `{delay: {fixedDelay: 5s, percentage: {value: 10}}}`, &faultv3.HTTPFault{Delay: &faultcommonv3.FaultDelay{
			Percentage: million(100000), FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: &durationpb.Duration{Seconds: 5}}}}},
		{"deprecated integer percent", `{delay: {fixedDelay: 1s, percent: 30}}`, &faultv3.HTTPFault{Delay: &faultcommonv3.FaultDelay{
			Percentage: wholePercent(30), FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: &durationpb.Duration{Seconds: 1}}}}},
		{"http abort", `{abort: {httpStatus: 418, percentage: {value: 0.1}}}`, &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
			Percentage: million(1000), ErrorType: &faultv3.FaultAbort_HttpStatus{HttpStatus: 418}}}},
		{"grpc abort", `{abort: {grpcStatus: UNAVAILABLE, percentage: {value: 100}}}`, &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
			Percentage: million(1000000), ErrorType: &faultv3.FaultAbort_GrpcStatus{GrpcStatus: 14}}}},
		{"both", `{delay: {fixedDelay: 2s, percentage: {value: 50}}, abort: {httpStatus: 503, percentage: {value: 50}}}`, &faultv3.HTTPFault{
			Delay: &faultcommonv3.FaultDelay{Percentage: million(500000), FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: &durationpb.Duration{Seconds: 2}}},
			Abort: &faultv3.FaultAbort{Percentage: million(500000), ErrorType: &faultv3.FaultAbort_HttpStatus{HttpStatus: 503}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := oneRoute(t, "fault: "+c.fault+toReviews)
			if len(r.GetTypedPerFilterConfig()) != 1 {
				t.Errorf("want only the fault filter config, got %v", r.GetTypedPerFilterConfig())
			}
			got := unpack(t, r.GetTypedPerFilterConfig()["envoy.filters.http.fault"], &faultv3.HTTPFault{})
			protoEqual(t, "fault", got, c.want)
		})
	}

	// Istio documents that without a percentage nothing is injected.
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - fault: {abort: {httpStatus: 500}}"+toReviews))
	got := unpack(t, onlyRoute(t, rcs).GetTypedPerFilterConfig()["envoy.filters.http.fault"], &faultv3.HTTPFault{})
	protoEqual(t, "abort without percentage", got, &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
		Percentage: wholePercent(0), ErrorType: &faultv3.FaultAbort_HttpStatus{HttpStatus: 500}}})
	if len(errs) != 1 || !hasError(errs, true, "spec.http[0].fault.abort.percentage", "no request will be aborted") {
		t.Errorf("errors:\n%s", errString(errs))
	}

	for _, bad := range []struct{ fault, field, msg string }{
		{`{abort: {grpcStatus: NOPE, percentage: {value: 1}}}`, "spec.http[0].fault.abort.grpcStatus", `unknown gRPC status "NOPE"`},
		{`{abort: {httpStatus: 700, percentage: {value: 1}}}`, "spec.http[0].fault.abort.httpStatus", "700 is not an HTTP status"},
		{`{delay: {exponentialDelay: 1s, percentage: {value: 1}}}`, "spec.http[0].fault.delay", "only fixedDelay is supported"},
	} {
		rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - fault: "+bad.fault+toReviews))
		if !hasError(errs, false, bad.field, bad.msg) {
			t.Errorf("fault %s: errors:\n%s", bad.fault, errString(errs))
		}
		if names := vhostNames(routeConfig(t, rcs, "http.80")); len(names) != 1 || names[0] != "blackhole:80" {
			t.Errorf("fault %s: the route should be skipped, got %v", bad.fault, names)
		}
	}
}

func TestCORS(t *testing.T) {
	r := oneRoute(t, `corsPolicy:
      allowOrigins: [{exact: "https://a.example"}, {prefix: "https://b."}, {regex: "https://.*\\.c\\.example"}]
      allowMethods: [GET, POST]
      allowHeaders: [x-token, content-type]
      exposeHeaders: [x-trace]
      maxAge: 86400s
      allowCredentials: true`+toReviews)
	got := unpack(t, r.GetTypedPerFilterConfig()["envoy.filters.http.cors"], &corsv3.CorsPolicy{})
	protoEqual(t, "cors", got, &corsv3.CorsPolicy{
		AllowOriginStringMatch: []*matcherv3.StringMatcher{exact("https://a.example"), prefix("https://b."), regex(`https://.*\.c\.example`)},
		AllowMethods:           "GET,POST",
		AllowHeaders:           "x-token,content-type",
		ExposeHeaders:          "x-trace",
		MaxAge:                 "86400",
		AllowCredentials:       wrapperspb.Bool(true),
		FilterEnabled:          &corev3.RuntimeFractionalPercent{DefaultValue: wholePercent(100)},
		// Istio forwards preflights no origin matched unless told to ignore them.
		ForwardNotMatchingPreflights: wrapperspb.Bool(true),
	})

	r = oneRoute(t, `corsPolicy: {allowOrigin: ["https://legacy.example"], unmatchedPreflights: IGNORE}`+toReviews)
	got = unpack(t, r.GetTypedPerFilterConfig()["envoy.filters.http.cors"], &corsv3.CorsPolicy{})
	protoEqual(t, "legacy cors", got, &corsv3.CorsPolicy{
		AllowOriginStringMatch:       []*matcherv3.StringMatcher{exact("https://legacy.example")},
		FilterEnabled:                &corev3.RuntimeFractionalPercent{DefaultValue: wholePercent(100)},
		ForwardNotMatchingPreflights: wrapperspb.Bool(false),
	})
}

func TestFaultAndCORSTogether(t *testing.T) {
	r := oneRoute(t, `corsPolicy: {allowOrigins: [{exact: "https://a"}]}
    fault: {delay: {fixedDelay: 1s, percentage: {value: 1}}}`+toReviews)
	if len(r.GetTypedPerFilterConfig()) != 2 || r.GetTypedPerFilterConfig()[FaultFilterName] == nil || r.GetTypedPerFilterConfig()[CORSFilterName] == nil {
		t.Errorf("typed per-filter config = %v", r.GetTypedPerFilterConfig())
	}
	if FaultFilterName != "envoy.filters.http.fault" || CORSFilterName != "envoy.filters.http.cors" {
		t.Errorf("filter names changed: %s %s", FaultFilterName, CORSFilterName)
	}
}
