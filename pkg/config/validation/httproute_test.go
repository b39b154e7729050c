package validation_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func route0(v *vs) *networking.HTTPRoute { return v.Http[0] }

func match0(v *vs) *networking.HTTPMatchRequest { return v.Http[0].Match[0] }

// redirectOnly replaces the base route's destinations with a redirect.
func redirectOnly(v *vs) {
	route0(v).Route = nil
	route0(v).Redirect = &networking.HTTPRedirect{Uri: "/new"}
}

func pct(f float64) *networking.Percent { return &networking.Percent{Value: f} }

func body(s string) *networking.HTTPBody {
	return &networking.HTTPBody{Specifier: &networking.HTTPBody_String_{String_: s}}
}

func TestHTTPRouteActions(t *testing.T) {
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "no action", mutate: func(v *vs) { route0(v).Route = nil },
			want: []string{"spec.http[0]"}, msg: "one of route, redirect, directResponse or delegate"},
		{name: "route and redirect", mutate: func(v *vs) { route0(v).Redirect = &networking.HTTPRedirect{Uri: "/x"} },
			want: []string{"spec.http[0]"}, msg: "route and redirect are mutually exclusive"},
		{name: "redirect and direct response", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).DirectResponse = &networking.HTTPDirectResponse{Status: 200}
		}, want: []string{"spec.http[0]"}, msg: "redirect and directResponse"},
		{name: "redirect", mutate: redirectOnly},
		{name: "redirect with rewrite", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).Rewrite = &networking.HTTPRewrite{Uri: "/"}
		}, want: []string{"spec.http[0].rewrite"}, msg: "cannot be combined with redirect"},
		{name: "redirect with fault", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).Fault = &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{
				ErrorType: &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: 500}}}
		}, want: []string{"spec.http[0].fault"}, msg: "cannot be combined with redirect"},
		{name: "empty redirect", mutate: func(v *vs) { redirectOnly(v); route0(v).Redirect.Uri = "" },
			want: []string{"spec.http[0].redirect"}, msg: "at least one of"},
		{name: "redirect uri and prefixRewrite", mutate: func(v *vs) { redirectOnly(v); route0(v).Redirect.PrefixRewrite = "/p" },
			want: []string{"spec.http[0].redirect.prefixRewrite"}, msg: "mutually exclusive"},
		{name: "redirect scheme, authority, code", mutate: func(v *vs) {
			redirectOnly(v)
			*route0(v).Redirect = networking.HTTPRedirect{Scheme: "https", Authority: "example.org", RedirectCode: 308}
		}},
		{name: "unsupported redirect code", mutate: func(v *vs) { redirectOnly(v); route0(v).Redirect.RedirectCode = 300 },
			want: []string{"spec.http[0].redirect.redirectCode"}, msg: "301, 302, 303, 307 or 308"},
		{name: "redirect scheme ftp", mutate: func(v *vs) { redirectOnly(v); route0(v).Redirect.Scheme = "ftp" },
			want: []string{"spec.http[0].redirect.scheme"}, msg: `"http" or "https"`},
		{name: "redirect port", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).Redirect.RedirectPort = &networking.HTTPRedirect_Port{Port: 8443}
		}},
		{name: "redirect port 0", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).Redirect.RedirectPort = &networking.HTTPRedirect_Port{Port: 0}
		}, want: []string{"spec.http[0].redirect.port"}, msg: "1-65535"},
		{name: "redirect derivePort", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).Redirect.RedirectPort = &networking.HTTPRedirect_DerivePort{DerivePort: networking.HTTPRedirect_FROM_REQUEST_PORT}
		}},
		{name: "redirect unknown derivePort", mutate: func(v *vs) {
			redirectOnly(v)
			route0(v).Redirect.RedirectPort = &networking.HTTPRedirect_DerivePort{DerivePort: 5}
		}, want: []string{"spec.http[0].redirect.derivePort"}, msg: "not a known value"},

		{name: "direct response", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).DirectResponse = &networking.HTTPDirectResponse{Status: 503, Body: body("down for maintenance")}
		}},
		{name: "direct response status 600", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).DirectResponse = &networking.HTTPDirectResponse{Status: 600}
		}, want: []string{"spec.http[0].directResponse.status"}, msg: "200-599"},
		{name: "direct response status 199", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).DirectResponse = &networking.HTTPDirectResponse{Status: 199}
		}, want: []string{"spec.http[0].directResponse.status"}, msg: "200-599"},
		{name: "direct response body too large", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).DirectResponse = &networking.HTTPDirectResponse{Status: 200, Body: body(strings.Repeat("x", 1<<20+1))}
		}, want: []string{"spec.http[0].directResponse.body"}, msg: "at most"},

		{name: "root delegating", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).Delegate = &networking.Delegate{Name: "reviews", Namespace: "prod"}
		}},
		{name: "delegate without a name", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).Delegate = &networking.Delegate{}
		}, want: []string{"spec.http[0].delegate.name"}, msg: "required"},
		{name: "delegate with a bad namespace", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).Delegate = &networking.Delegate{Name: "reviews", Namespace: "a.b"}
		}, want: []string{"spec.http[0].delegate.namespace"}, msg: "namespace"},
		{name: "delegate delegating again", mutate: func(v *vs) {
			asDelegate(v)
			route0(v).Route = nil
			route0(v).Delegate = &networking.Delegate{Name: "other"}
		}, want: []string{"spec.http[0].delegate"}, msg: "cannot delegate further"},
		{name: "regex on a delegating route", mutate: func(v *vs) {
			route0(v).Route = nil
			route0(v).Delegate = &networking.Delegate{Name: "reviews"}
			match0(v).Uri = regex("^/a")
		}, want: []string{"spec.http[0].match[0].uri.regex"}, msg: "delegation"},
		{name: "regex in a delegate", mutate: func(v *vs) {
			asDelegate(v)
			match0(v).Headers = map[string]*networking.StringMatch{"x-a": regex("b.*")}
		}, want: []string{`spec.http[0].match[0].headers["x-a"].regex`}, msg: "delegation"},
	})
}

func TestHTTPRouteMatch(t *testing.T) {
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "all string matches", mutate: func(v *vs) {
			m := match0(v)
			m.Uri, m.Method, m.Scheme, m.Authority = regex(`^/api/v[0-9]+/`), exact("GET"), exact("https"), prefix("api.")
		}},
		{name: "null match", mutate: func(v *vs) { route0(v).Match[0] = nil },
			want: []string{"spec.http[0].match[0]"}, msg: "null"},
		{name: "invalid uri regex", mutate: func(v *vs) { match0(v).Uri = regex("(") },
			want: []string{"spec.http[0].match[0].uri.regex"}, msg: "invalid RE2 regex"},
		{name: "empty uri regex", mutate: func(v *vs) { match0(v).Uri = regex("") },
			want: []string{"spec.http[0].match[0].uri.regex"}, msg: "must not be empty"},
		{name: "lookahead is not RE2", mutate: func(v *vs) { match0(v).Uri = regex("/(?=a)") },
			want: []string{"spec.http[0].match[0].uri.regex"}, msg: "invalid RE2 regex"},
		{name: "regex too long", mutate: func(v *vs) { match0(v).Uri = regex(strings.Repeat("a", 1025)) },
			want: []string{"spec.http[0].match[0].uri.regex"}, msg: "at most 1024"},
		{name: "invalid authority regex", mutate: func(v *vs) { match0(v).Authority = regex("[") },
			want: []string{"spec.http[0].match[0].authority.regex"}, msg: "invalid RE2 regex"},
		{name: "invalid method regex", mutate: func(v *vs) { match0(v).Method = regex("GET|(") },
			want: []string{"spec.http[0].match[0].method.regex"}, msg: "invalid RE2 regex"},
		{name: "header matches", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{"x-user": exact("a"), "x-present": {}, "x_b": regex("^b")}
		}},
		// istiod accepts any token as a header name; upper case is
		// lower-cased by the translators with a warning.
		{name: "upper-case header name", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{"X-User": exact("a")}
		}},
		{name: "header name with a space", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{"X User": exact("a")}
		}, want: []string{`spec.http[0].match[0].headers["X User"]`}, msg: "not a valid header name"},
		{name: "pseudo-header match", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{":path": exact("/")}
		}, want: []string{`spec.http[0].match[0].headers[":path"]`}, msg: "not a valid header name"},
		{name: "null header match", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{"x-a": nil}
		}, want: []string{`spec.http[0].match[0].headers["x-a"]`}, msg: "null"},
		{name: "invalid header regex", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{"x-a": regex("a(")}
		}, want: []string{`spec.http[0].match[0].headers["x-a"].regex`}, msg: "invalid RE2 regex"},
		{name: "JWT claim on a gateway", mutate: func(v *vs) {
			match0(v).Headers = map[string]*networking.StringMatch{"@request.auth.claims.group": exact("admin")}
		}},
		{name: "JWT claim on the mesh", mutate: func(v *vs) {
			v.Gateways = nil
			match0(v).Headers = map[string]*networking.StringMatch{"@request.auth.claims.group": exact("admin")}
		}, want: []string{`spec.http[0].match[0].headers["@request.auth.claims.group"]`}, msg: "only supported"},
		{name: "upper-case withoutHeaders name", mutate: func(v *vs) {
			match0(v).WithoutHeaders = map[string]*networking.StringMatch{"X-A": exact("a")}
		}},
		{name: "withoutHeaders name with a slash", mutate: func(v *vs) {
			match0(v).WithoutHeaders = map[string]*networking.StringMatch{"x/a": exact("a")}
		}, want: []string{`spec.http[0].match[0].withoutHeaders["x/a"]`}, msg: "not a valid header name"},
		{name: "query parameters", mutate: func(v *vs) {
			match0(v).QueryParams = map[string]*networking.StringMatch{"page": exact("1"), "debug": exact(""), "q": prefix("ab")}
		}},
		{name: "invalid query parameter regex", mutate: func(v *vs) {
			match0(v).QueryParams = map[string]*networking.StringMatch{"id": regex("[")}
		}, want: []string{`spec.http[0].match[0].queryParams["id"].regex`}, msg: "invalid RE2 regex"},
		{name: "empty query parameter name", mutate: func(v *vs) {
			match0(v).QueryParams = map[string]*networking.StringMatch{"": exact("x")}
		}, want: []string{`spec.http[0].match[0].queryParams[""]`}, msg: "must not be empty"},
		{name: "match port", mutate: func(v *vs) { match0(v).Port = 8080 }},
		{name: "match port above 65535", mutate: func(v *vs) { match0(v).Port = 70000 },
			want: []string{"spec.http[0].match[0].port"}, msg: "1-65535"},
		{name: "bad source label", mutate: func(v *vs) { match0(v).SourceLabels = map[string]string{"app": "a b"} },
			want: []string{`spec.http[0].match[0].sourceLabels["app"]`}, msg: "label value"},
		{name: "bad match gateway", mutate: func(v *vs) { match0(v).Gateways = []string{"default/Public"} },
			want: []string{"spec.http[0].match[0].gateways[0]"}, msg: "DNS-1123 label"},
		{name: "bad source namespace", mutate: func(v *vs) { match0(v).SourceNamespace = "Prod" },
			want: []string{"spec.http[0].match[0].sourceNamespace"}, msg: "namespace"},
	})
}

func TestHTTPRouteHeadersAndRewrite(t *testing.T) {
	reqSet := func(m map[string]string) func(*vs) {
		return func(v *vs) {
			route0(v).Headers = &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: m}}
		}
	}
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "header operations", mutate: func(v *vs) {
			route0(v).Headers = &networking.Headers{
				Request: &networking.Headers_HeaderOperations{
					Set:    map[string]string{"x-client": "%DOWNSTREAM_REMOTE_ADDRESS%", ":authority": "internal.example.com"},
					Add:    map[string]string{"x-discount": "100%%", "x-copy": "%REQ(x-foo)%", "x-time": "%START_TIME(%s)%"},
					Remove: []string{"x-debug"},
				},
				Response: &networking.Headers_HeaderOperations{
					Set:    map[string]string{"cache-control": "no-store", "x-len": "%RESP(content-length):10%"},
					Remove: []string{"server"},
				},
			}
		}},
		{name: "host header set on the request", mutate: reqSet(map[string]string{"Host": "a.example.com"})},
		{name: "authority set on the response", mutate: func(v *vs) {
			route0(v).Headers = &networking.Headers{Response: &networking.Headers_HeaderOperations{Set: map[string]string{":authority": "x"}}}
		}, want: []string{`spec.http[0].headers.response.set[":authority"]`}, msg: "cannot be removed or set on a response"},
		{name: "host header removed", mutate: func(v *vs) {
			route0(v).Headers = &networking.Headers{Request: &networking.Headers_HeaderOperations{Remove: []string{"host"}}}
		}, want: []string{"spec.http[0].headers.request.remove[0]"}, msg: "cannot be removed"},
		{name: "pseudo-header set", mutate: reqSet(map[string]string{":path": "/x"}),
			want: []string{`spec.http[0].headers.request.set[":path"]`}, msg: "pseudo-header"},
		{name: "empty header name", mutate: func(v *vs) {
			route0(v).Headers = &networking.Headers{Request: &networking.Headers_HeaderOperations{Add: map[string]string{"": "x"}}}
		}, want: []string{`spec.http[0].headers.request.add[""]`}, msg: "must not be empty"},
		{name: "header name with a space", mutate: reqSet(map[string]string{"x a": "b"}),
			want: []string{`spec.http[0].headers.request.set["x a"]`}, msg: "not a valid header name"},
		{name: "lone percent in a value", mutate: reqSet(map[string]string{"x-a": "100%"}),
			want: []string{`spec.http[0].headers.request.set["x-a"]`}, msg: "%-expression"},
		{name: "unterminated variable", mutate: reqSet(map[string]string{"x-a": "%HOSTNAME"}),
			want: []string{`spec.http[0].headers.request.set["x-a"]`}, msg: "%-expression"},
		{name: "lower-case variable", mutate: reqSet(map[string]string{"x-a": "%hostname%"}),
			want: []string{`spec.http[0].headers.request.set["x-a"]`}, msg: "%-expression"},
		{name: "control character in a value", mutate: reqSet(map[string]string{"x-a": "a\nb"}),
			want: []string{`spec.http[0].headers.request.set["x-a"]`}, msg: "control character"},
		{name: "authority rewritten twice", mutate: func(v *vs) {
			reqSet(map[string]string{":authority": "b.example.com"})(v)
			route0(v).Rewrite = &networking.HTTPRewrite{Authority: "a.example.com"}
		}, want: []string{"spec.http[0].headers.request"}, msg: "more than once"},

		{name: "uri rewrite", mutate: func(v *vs) { route0(v).Rewrite = &networking.HTTPRewrite{Uri: "/v2/"} }},
		{name: "uri regex rewrite", mutate: func(v *vs) {
			route0(v).Rewrite = &networking.HTTPRewrite{UriRegexRewrite: &networking.RegexRewrite{Match: `^/v1/(.*)$`, Rewrite: `/v2/\1`}}
		}},
		{name: "uri and uriRegexRewrite", mutate: func(v *vs) {
			route0(v).Rewrite = &networking.HTTPRewrite{Uri: "/", UriRegexRewrite: &networking.RegexRewrite{Match: "a", Rewrite: "b"}}
		}, want: []string{"spec.http[0].rewrite"}, msg: "mutually exclusive"},
		{name: "empty rewrite", mutate: func(v *vs) { route0(v).Rewrite = &networking.HTTPRewrite{} },
			want: []string{"spec.http[0].rewrite"}, msg: "must set uri, uriRegexRewrite or authority"},
		{name: "invalid uriRegexRewrite match", mutate: func(v *vs) {
			route0(v).Rewrite = &networking.HTTPRewrite{UriRegexRewrite: &networking.RegexRewrite{Match: "(", Rewrite: "/"}}
		}, want: []string{"spec.http[0].rewrite.uriRegexRewrite.match"}, msg: "invalid RE2 regex"},
		{name: "uriRegexRewrite without rewrite", mutate: func(v *vs) {
			route0(v).Rewrite = &networking.HTTPRewrite{UriRegexRewrite: &networking.RegexRewrite{Match: "^/a"}}
		}, want: []string{"spec.http[0].rewrite.uriRegexRewrite.rewrite"}, msg: "required"},
	})
}

func TestHTTPRouteTimeoutsAndRetries(t *testing.T) {
	retries := func(r *networking.HTTPRetry) func(*vs) { return func(v *vs) { route0(v).Retries = r } }
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "timeout 0 disables it", mutate: func(v *vs) { route0(v).Timeout = dur(0) }},
		{name: "timeout 1.5s", mutate: func(v *vs) { route0(v).Timeout = dur(1500 * time.Millisecond) }},
		{name: "negative timeout", mutate: func(v *vs) { route0(v).Timeout = dur(-time.Second) },
			want: []string{"spec.http[0].timeout"}, msg: "negative"},
		{name: "sub-millisecond timeout", mutate: func(v *vs) { route0(v).Timeout = dur(1500 * time.Microsecond) },
			want: []string{"spec.http[0].timeout"}, msg: "whole number of milliseconds"},
		{name: "malformed timeout", mutate: func(v *vs) { route0(v).Timeout = &durationpb.Duration{Seconds: 1, Nanos: -1} },
			want: []string{"spec.http[0].timeout"}, msg: "invalid duration"},

		{name: "retries", mutate: retries(&networking.HTTPRetry{
			Attempts: 3, PerTryTimeout: dur(2 * time.Second), Backoff: dur(25 * time.Millisecond),
			RetryOn: "5xx,gateway-error,reset,connect-failure,retriable-4xx,refused-stream,retriable-status-codes,503,cancelled,unavailable",
		})},
		{name: "retries disabled", mutate: retries(&networking.HTTPRetry{Attempts: 0})},
		{name: "negative attempts", mutate: retries(&networking.HTTPRetry{Attempts: -1}),
			want: []string{"spec.http[0].retries.attempts"}, msg: "negative"},
		{name: "zero attempts with retryOn", mutate: retries(&networking.HTTPRetry{RetryOn: "5xx"}),
			want: []string{"spec.http[0].retries.attempts"}, msg: "disables retries"},
		{name: "zero attempts with remote localities", mutate: retries(&networking.HTTPRetry{RetryRemoteLocalities: wrapperspb.Bool(true)}),
			want: []string{"spec.http[0].retries.attempts"}, msg: "disables retries"},
		{name: "negative perTryTimeout", mutate: retries(&networking.HTTPRetry{Attempts: 2, PerTryTimeout: dur(-time.Millisecond)}),
			want: []string{"spec.http[0].retries.perTryTimeout"}, msg: "negative"},
		{name: "sub-millisecond perTryTimeout", mutate: retries(&networking.HTTPRetry{Attempts: 2, PerTryTimeout: dur(time.Microsecond)}),
			want: []string{"spec.http[0].retries.perTryTimeout"}, msg: "milliseconds"},
		{name: "zero backoff", mutate: retries(&networking.HTTPRetry{Attempts: 2, Backoff: dur(0)}),
			want: []string{"spec.http[0].retries.backoff"}, msg: "at least 1ms"},
		{name: "unknown retryOn", mutate: retries(&networking.HTTPRetry{Attempts: 2, RetryOn: "5xx,oops"}),
			want: []string{"spec.http[0].retries.retryOn"}, msg: `"oops"`},
		{name: "retryOn with a space", mutate: retries(&networking.HTTPRetry{Attempts: 2, RetryOn: "5xx, reset"}),
			want: []string{"spec.http[0].retries.retryOn"}, msg: `" reset"`},
		{name: "retryOn with an empty entry", mutate: retries(&networking.HTTPRetry{Attempts: 2, RetryOn: "5xx,,reset"}),
			want: []string{"spec.http[0].retries.retryOn"}, msg: `""`},
		{name: "retryOn status out of range", mutate: retries(&networking.HTTPRetry{Attempts: 2, RetryOn: "700"}),
			want: []string{"spec.http[0].retries.retryOn"}, msg: `"700"`},
	})
}

func TestHTTPRouteFaultMirrorCORS(t *testing.T) {
	fault := func(f *networking.HTTPFaultInjection) func(*vs) { return func(v *vs) { route0(v).Fault = f } }
	fixed := func(d time.Duration) *networking.HTTPFaultInjection_Delay_FixedDelay {
		return &networking.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: dur(d)}
	}
	httpStatus := func(s int32) *networking.HTTPFaultInjection_Abort_HttpStatus {
		return &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: s}
	}
	type delay = networking.HTTPFaultInjection_Delay
	type abort = networking.HTTPFaultInjection_Abort
	cors := func(c *networking.CorsPolicy) func(*vs) { return func(v *vs) { route0(v).CorsPolicy = c } }
	runCases(t, schema.VirtualService, baseVirtualService, []testCase[vs]{
		{name: "delay and abort", mutate: fault(&networking.HTTPFaultInjection{
			Delay: &delay{Percentage: pct(50), HttpDelayType: fixed(5 * time.Second)},
			Abort: &abort{Percentage: pct(0.5), ErrorType: httpStatus(503)},
		})},
		{name: "gRPC abort", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{
			ErrorType: &networking.HTTPFaultInjection_Abort_GrpcStatus{GrpcStatus: "UNAVAILABLE"}}})},
		{name: "empty fault", mutate: fault(&networking.HTTPFaultInjection{}),
			want: []string{"spec.http[0].fault"}, msg: "delay, an abort"},
		{name: "delay percentage above 100", mutate: fault(&networking.HTTPFaultInjection{Delay: &delay{Percentage: pct(101), HttpDelayType: fixed(time.Second)}}),
			want: []string{"spec.http[0].fault.delay.percentage.value"}, msg: "0-100"},
		{name: "delay percentage NaN", mutate: fault(&networking.HTTPFaultInjection{Delay: &delay{Percentage: pct(math.NaN()), HttpDelayType: fixed(time.Second)}}),
			want: []string{"spec.http[0].fault.delay.percentage.value"}, msg: "0-100"},
		{name: "deprecated delay percent above 100", mutate: fault(&networking.HTTPFaultInjection{Delay: &delay{Percent: 150, HttpDelayType: fixed(time.Second)}}),
			want: []string{"spec.http[0].fault.delay.percent"}, msg: "0-100"},
		{name: "delay without a duration", mutate: fault(&networking.HTTPFaultInjection{Delay: &delay{Percentage: pct(10)}}),
			want: []string{"spec.http[0].fault.delay.fixedDelay"}, msg: "required"},
		{name: "zero delay", mutate: fault(&networking.HTTPFaultInjection{Delay: &delay{HttpDelayType: fixed(0)}}),
			want: []string{"spec.http[0].fault.delay.fixedDelay"}, msg: "at least 1ms"},
		{name: "exponential delay", mutate: fault(&networking.HTTPFaultInjection{Delay: &delay{
			HttpDelayType: &networking.HTTPFaultInjection_Delay_ExponentialDelay{ExponentialDelay: dur(time.Second)}}}),
			want: []string{"spec.http[0].fault.delay.exponentialDelay"}, msg: "not supported"},
		{name: "abort status 600", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{ErrorType: httpStatus(600)}}),
			want: []string{"spec.http[0].fault.abort.httpStatus"}, msg: "200-599"},
		{name: "abort status 100", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{ErrorType: httpStatus(100)}}),
			want: []string{"spec.http[0].fault.abort.httpStatus"}, msg: "200-599"},
		{name: "abort without a status", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{Percentage: pct(1)}}),
			want: []string{"spec.http[0].fault.abort"}, msg: "httpStatus or grpcStatus"},
		{name: "abort with an unknown gRPC status", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{
			ErrorType: &networking.HTTPFaultInjection_Abort_GrpcStatus{GrpcStatus: "unavailable"}}}),
			want: []string{"spec.http[0].fault.abort.grpcStatus"}, msg: "gRPC status"},
		{name: "abort with an http2 error", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{
			ErrorType: &networking.HTTPFaultInjection_Abort_Http2Error{Http2Error: "REFUSED_STREAM"}}}),
			want: []string{"spec.http[0].fault.abort.http2Error"}, msg: "not supported"},
		{name: "abort percentage below 0", mutate: fault(&networking.HTTPFaultInjection{Abort: &abort{Percentage: pct(-1), ErrorType: httpStatus(500)}}),
			want: []string{"spec.http[0].fault.abort.percentage.value"}, msg: "0-100"},

		{name: "mirror", mutate: func(v *vs) { route0(v).Mirror = dest("shadow"); route0(v).MirrorPercentage = pct(10) }},
		{name: "mirror without host", mutate: func(v *vs) { route0(v).Mirror = &networking.Destination{} },
			want: []string{"spec.http[0].mirror.host"}, msg: "host is required"},
		{name: "mirror percentage above 100", mutate: func(v *vs) { route0(v).Mirror = dest("shadow"); route0(v).MirrorPercentage = pct(150) },
			want: []string{"spec.http[0].mirrorPercentage.value"}, msg: "0-100"},
		{name: "deprecated mirror percent above 100", mutate: func(v *vs) {
			route0(v).Mirror = dest("shadow")
			route0(v).MirrorPercent = wrapperspb.UInt32(101)
		}, want: []string{"spec.http[0].mirrorPercent"}, msg: "0-100"},
		{name: "mirrors", mutate: func(v *vs) {
			route0(v).Mirrors = []*networking.HTTPMirrorPolicy{{Destination: dest("shadow"), Percentage: pct(5)}, {Destination: dest("audit")}}
		}},
		{name: "mirrors without destination", mutate: func(v *vs) { route0(v).Mirrors = []*networking.HTTPMirrorPolicy{{}} },
			want: []string{"spec.http[0].mirrors[0].destination"}, msg: "required"},
		{name: "mirrors percentage above 100", mutate: func(v *vs) {
			route0(v).Mirrors = []*networking.HTTPMirrorPolicy{{Destination: dest("shadow"), Percentage: pct(100.5)}}
		}, want: []string{"spec.http[0].mirrors[0].percentage.value"}, msg: "0-100"},
		{name: "null mirrors entry", mutate: func(v *vs) { route0(v).Mirrors = []*networking.HTTPMirrorPolicy{nil} },
			want: []string{"spec.http[0].mirrors[0]"}, msg: "null"},
		{name: "mirror and mirrors", mutate: func(v *vs) {
			route0(v).Mirror = dest("shadow")
			route0(v).Mirrors = []*networking.HTTPMirrorPolicy{{Destination: dest("audit")}}
		}, want: []string{"spec.http[0].mirrors"}, msg: "mutually exclusive"},

		{name: "CORS policy", mutate: cors(&networking.CorsPolicy{
			AllowOrigins:     []*networking.StringMatch{exact("https://a.example.com"), regex(`https://.*\.example\.org`), prefix("https://b")},
			AllowMethods:     []string{"GET", "POST", "OPTIONS"},
			AllowHeaders:     []string{"content-type", "*"},
			ExposeHeaders:    []string{"x-request-id"},
			MaxAge:           dur(24 * time.Hour),
			AllowCredentials: wrapperspb.Bool(true),
		})},
		{name: "CORS origin regex invalid", mutate: cors(&networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{regex("https://(")}}),
			want: []string{"spec.http[0].corsPolicy.allowOrigins[0].regex"}, msg: "invalid RE2 regex"},
		{name: "CORS empty exact origin", mutate: cors(&networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{exact("")}}),
			want: []string{"spec.http[0].corsPolicy.allowOrigins[0].exact"}, msg: "must not be empty"},
		{name: "CORS origin without a match", mutate: cors(&networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{{}}}),
			want: []string{"spec.http[0].corsPolicy.allowOrigins[0]"}, msg: "exact, prefix or regex"},
		{name: "CORS deprecated empty origin", mutate: cors(&networking.CorsPolicy{AllowOrigin: []string{""}}),
			want: []string{"spec.http[0].corsPolicy.allowOrigin[0]"}, msg: "must not be empty"},
		{name: "CORS lower-case method", mutate: cors(&networking.CorsPolicy{AllowMethods: []string{"get"}}),
			want: []string{"spec.http[0].corsPolicy.allowMethods[0]"}, msg: "HTTP method"},
		{name: "CORS any method", mutate: cors(&networking.CorsPolicy{AllowMethods: []string{"*"}})},
		{name: "CORS any method beside others", mutate: cors(&networking.CorsPolicy{AllowMethods: []string{"GET", "*"}}),
			want: []string{"spec.http[0].corsPolicy.allowMethods[1]"}, msg: "* alone"},
		{name: "CORS bad allowed header", mutate: cors(&networking.CorsPolicy{AllowHeaders: []string{"a b"}}),
			want: []string{"spec.http[0].corsPolicy.allowHeaders[0]"}, msg: "header name"},
		{name: "CORS bad exposed header", mutate: cors(&networking.CorsPolicy{ExposeHeaders: []string{""}}),
			want: []string{"spec.http[0].corsPolicy.exposeHeaders[0]"}, msg: "header name"},
		{name: "CORS maxAge with milliseconds", mutate: cors(&networking.CorsPolicy{MaxAge: dur(1500 * time.Millisecond)}),
			want: []string{"spec.http[0].corsPolicy.maxAge"}, msg: "whole number of seconds"},
		{name: "CORS negative maxAge", mutate: cors(&networking.CorsPolicy{MaxAge: dur(-time.Second)}),
			want: []string{"spec.http[0].corsPolicy.maxAge"}, msg: "non-negative"},
		{name: "CORS unknown unmatchedPreflights", mutate: cors(&networking.CorsPolicy{UnmatchedPreflights: 7}),
			want: []string{"spec.http[0].corsPolicy.unmatchedPreflights"}, msg: "not a known value"},
	})
}
