package route

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// oneRoute translates a single HTTP route (YAML under "- ") for foo.com.
func oneRoute(t *testing.T, http string) *routev3.Route {
	t.Helper()
	return onlyRoute(t, buildOK(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - "+http)))
}

func TestDestinations(t *testing.T) {
	cases := []struct {
		name string
		http string
		want *routev3.RouteAction // only ClusterSpecifier is compared
	}{
		{"single destination takes the service's only port", `route: [{destination: {host: reviews.default.svc.cluster.local}}]`,
			&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|9080||reviews.default.svc.cluster.local"}}},
		{"explicit port and subset", `route: [{destination: {host: reviews.default.svc.cluster.local, subset: v2, port: {number: 9080}}}]`,
			&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|9080|v2|reviews.default.svc.cluster.local"}}},
		{"explicit port picks among several", `route: [{destination: {host: multi.default.svc.cluster.local, port: {number: 8080}}}]`,
			&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|8080||multi.default.svc.cluster.local"}}},
		{"short name resolves in the VirtualService namespace", `route: [{destination: {host: reviews}}]`,
			&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|9080||reviews.default.svc.cluster.local"}}},
		{"weighted", `route:
    - {destination: {host: reviews.default.svc.cluster.local, subset: v1}, weight: 75}
    - {destination: {host: reviews.default.svc.cluster.local, subset: v2}, weight: 25}
    - {destination: {host: ratings.default.svc.cluster.local}, weight: 0}`,
			&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
				{Name: "outbound|9080|v1|reviews.default.svc.cluster.local", Weight: wrapperspb.UInt32(75)},
				{Name: "outbound|9080|v2|reviews.default.svc.cluster.local", Weight: wrapperspb.UInt32(25)},
			}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := oneRoute(t, "name: r\n    "+c.http).GetRoute()
			protoEqual(t, "cluster", &routev3.RouteAction{ClusterSpecifier: got.GetClusterSpecifier()}, c.want)
		})
	}
}

func TestDestinationHeaders(t *testing.T) {
	single := oneRoute(t, `route:
    - destination: {host: reviews.default.svc.cluster.local}
      headers:
        request: {set: {x-dst: a, host: dst.example}}
        response: {remove: [x-secret]}`)
	if got := single.GetRequestHeadersToAdd(); len(got) != 1 || got[0].GetHeader().GetKey() != "x-dst" {
		t.Errorf("request headers = %v", got)
	}
	if got := single.GetResponseHeadersToRemove(); len(got) != 1 || got[0] != "x-secret" {
		t.Errorf("response removes = %v", got)
	}
	if got := single.GetRoute().GetHostRewriteLiteral(); got != "dst.example" {
		t.Errorf("host rewrite = %q", got)
	}

	weighted := oneRoute(t, `route:
    - destination: {host: reviews.default.svc.cluster.local, subset: v1}
      weight: 50
      headers: {request: {add: {x-v: "1"}, set: {":authority": v1.example}}}
    - destination: {host: reviews.default.svc.cluster.local, subset: v2}
      weight: 50`)
	cw := weighted.GetRoute().GetWeightedClusters().GetClusters()[0]
	protoEqual(t, "weighted request headers", &routev3.WeightedCluster_ClusterWeight{RequestHeadersToAdd: cw.GetRequestHeadersToAdd()},
		&routev3.WeightedCluster_ClusterWeight{RequestHeadersToAdd: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x-v", Value: "1"}, AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD},
		}})
	if cw.GetHostRewriteLiteral() != "v1.example" {
		t.Errorf("weighted host rewrite = %q", cw.GetHostRewriteLiteral())
	}
}

func TestDestinationErrors(t *testing.T) {
	cases := []struct {
		name, http, field, msg string
		warning                bool
		routed                 bool // the route is still built
	}{
		{"unknown subset", `route: [{destination: {host: reviews.default.svc.cluster.local, subset: v3}}]`,
			"spec.http[0].route[0].destination.subset", `subset "v3" is not defined by any DestinationRule for host reviews.default.svc.cluster.local`, false, false},
		{"unknown subset in weighted", `route: [{destination: {host: reviews.default.svc.cluster.local, subset: v1}, weight: 50}, {destination: {host: reviews.default.svc.cluster.local, subset: nope}, weight: 50}]`,
			"spec.http[0].route[1].destination.subset", `subset "nope"`, false, false},
		{"subset of a host without rule", `route: [{destination: {host: ratings.default.svc.cluster.local, subset: v1}}]`,
			"spec.http[0].route[0].destination.subset", "not defined", false, false},
		{"port ambiguous", `route: [{destination: {host: multi.default.svc.cluster.local}}]`,
			"spec.http[0].route[0].destination.port", "service multi.default.svc.cluster.local has 2 ports", false, false},
		{"port unknown", `route: [{destination: {host: nowhere.example.com}}]`,
			"spec.http[0].route[0].destination.port", "no service is defined for host nowhere.example.com", false, false},
		{"unknown host with port", `route: [{destination: {host: nowhere.example.com, port: {number: 80}}}]`,
			"spec.http[0].route[0].destination.host", "no service is defined for host nowhere.example.com", true, true},
		{"port the service lacks", `route: [{destination: {host: reviews.default.svc.cluster.local, port: {number: 1}}}]`,
			"spec.http[0].route[0].destination.port.number", "has no port 1", true, true},
		{"all weights zero", `route: [{destination: {host: reviews.default.svc.cluster.local}, weight: 0}, {destination: {host: ratings.default.svc.cluster.local}, weight: 0}]`,
			"spec.http[0].route", "every destination has weight 0", false, false},
		{"nothing to do", `name: empty`, "spec.http[0]", "one of route, redirect or directResponse is required", false, false},
		{"delegate", `delegate: {name: other}`, "spec.http[0].delegate", "not supported", false, false},
		{"bad mirror subset", `route: [{destination: {host: reviews.default.svc.cluster.local}}]
    mirror: {host: reviews.default.svc.cluster.local, subset: gone}`, "spec.http[0].mirror.subset", `subset "gone"`, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - "+c.http+"\n"))
			if len(errs) != 1 || !hasError(errs, c.warning, c.field, c.msg) {
				t.Errorf("want one %s on %s: %s; got\n%s", map[bool]string{true: "warning", false: "error"}[c.warning], c.field, c.msg, errString(errs))
			}
			rc := routeConfig(t, rcs, "http.80")
			if c.routed != (len(rc.GetVirtualHosts()) == 1 && rc.GetVirtualHosts()[0].GetName() == "foo.com:80") {
				t.Errorf("route built = %v, want %v: %v", !c.routed, c.routed, vhostNames(rc))
			}
		})
	}
}

func TestRedirect(t *testing.T) {
	cases := []struct {
		name, redirect string
		want           *routev3.RedirectAction
	}{
		{"defaults to 301", `{uri: /new, authority: new.example.com}`,
			&routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/new"}, HostRedirect: "new.example.com"}},
		{"302", `{uri: /x, redirectCode: 302}`, &routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/x"}, ResponseCode: routev3.RedirectAction_FOUND}},
		{"303", `{uri: /x, redirectCode: 303}`, &routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/x"}, ResponseCode: routev3.RedirectAction_SEE_OTHER}},
		{"307", `{uri: /x, redirectCode: 307}`, &routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/x"}, ResponseCode: routev3.RedirectAction_TEMPORARY_REDIRECT}},
		{"308", `{uri: /x, redirectCode: 308}`, &routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PathRedirect{PathRedirect: "/x"}, ResponseCode: routev3.RedirectAction_PERMANENT_REDIRECT}},
		{"scheme and port", `{scheme: https, port: 8443}`, &routev3.RedirectAction{SchemeRewriteSpecifier: &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: "https"}, PortRedirect: 8443}},
		{"default port of the scheme is left out", `{scheme: https, port: 443}`, &routev3.RedirectAction{SchemeRewriteSpecifier: &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: "https"}}},
		{"request port is the gateway port", `{derivePort: FROM_REQUEST_PORT, scheme: https}`, &routev3.RedirectAction{SchemeRewriteSpecifier: &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: "https"}, PortRedirect: 80}},
		{"request port 80 over http is left out", `{derivePort: FROM_REQUEST_PORT}`, &routev3.RedirectAction{}},
		{"prefix rewrite", `{prefixRewrite: /v2}`, &routev3.RedirectAction{PathRewriteSpecifier: &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: "/v2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := oneRoute(t, "match: [{uri: {prefix: /old}}]\n    redirect: "+c.redirect)
			protoEqual(t, "redirect", r.GetRedirect(), c.want)
			if r.GetRoute() != nil {
				t.Errorf("a redirect route should not forward")
			}
		})
	}

	_, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - redirect: {uri: /x, redirectCode: 304}\n"))
	if !hasError(errs, false, "spec.http[0].redirect.redirectCode", "304 is not a supported redirect code") {
		t.Errorf("errors:\n%s", errString(errs))
	}
	_, errs = build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - redirect: {uri: /x}"+toReviews))
	if !hasError(errs, true, "spec.http[0].route", "ignored: redirect takes precedence") {
		t.Errorf("errors:\n%s", errString(errs))
	}
}

func TestRewrite(t *testing.T) {
	cases := []struct {
		name, http string
		want       *routev3.RouteAction // only rewrite fields are compared
	}{
		{"prefix", `match: [{uri: {prefix: /api/}}]
    rewrite: {uri: /}`, &routev3.RouteAction{PrefixRewrite: "/"}},
		// With an exact match Envoy's prefix rewrite swaps the whole path.
		{"exact", `match: [{uri: {exact: /old}}]
    rewrite: {uri: /new}`, &routev3.RouteAction{PrefixRewrite: "/new"}},
		{"regex", `rewrite: {uriRegexRewrite: {match: "^/service/([^/]+)(/.*)$", rewrite: '\2/instance/\1'}}`,
			&routev3.RouteAction{RegexRewrite: &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: "^/service/([^/]+)(/.*)$"}, Substitution: `\2/instance/\1`}}},
		{"authority", `rewrite: {authority: backend.internal}`, &routev3.RouteAction{HostRewriteSpecifier: &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "backend.internal"}}},
		{"authority beats host header", `rewrite: {authority: backend.internal}
    headers: {request: {set: {Host: other}}}`, &routev3.RouteAction{HostRewriteSpecifier: &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "backend.internal"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := oneRoute(t, c.http+toReviews).GetRoute()
			got := &routev3.RouteAction{PrefixRewrite: a.GetPrefixRewrite(), RegexRewrite: a.GetRegexRewrite(), HostRewriteSpecifier: a.GetHostRewriteSpecifier()}
			protoEqual(t, "rewrite", got, c.want)
		})
	}
}

func TestDirectResponse(t *testing.T) {
	r := oneRoute(t, `directResponse: {status: 503, body: {string: "down for maintenance"}}`)
	protoEqual(t, "direct response", r.GetDirectResponse(), &routev3.DirectResponseAction{
		Status: 503, Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "down for maintenance"}}})
	r = oneRoute(t, `directResponse: {status: 200, body: {bytes: "aGVsbG8="}}`)
	protoEqual(t, "direct response bytes", r.GetDirectResponse(), &routev3.DirectResponseAction{
		Status: 200, Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: []byte("hello")}}})
	r = oneRoute(t, `directResponse: {status: 204}`)
	protoEqual(t, "direct response without body", r.GetDirectResponse(), &routev3.DirectResponseAction{Status: 204})

	_, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - directResponse: {status: 99}\n"))
	if !hasError(errs, false, "spec.http[0].directResponse.status", "99 is not an HTTP status") {
		t.Errorf("errors:\n%s", errString(errs))
	}
}

func TestTimeoutAndRetries(t *testing.T) {
	previousHosts := func() []*routev3.RetryPolicy_RetryHostPredicate {
		a, err := protoconv.ValidatedAny(&previoushostsv3.PreviousHostsPredicate{})
		if err != nil {
			t.Fatal(err)
		}
		return []*routev3.RetryPolicy_RetryHostPredicate{{Name: "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: a}}}
	}
	// istiod 1.29 retry.go DefaultPolicy: no retriable status code.
	istioDefault := &routev3.RetryPolicy{
		RetryOn: "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes", NumRetries: wrapperspb.UInt32(2),
		RetryHostPredicate: previousHosts(), HostSelectionRetryMaxAttempts: 5,
	}
	cases := []struct {
		name, http string
		timeout    *durationpb.Duration
		retry      *routev3.RetryPolicy
	}{
		{"defaults: no timeout, Istio's retries", "", durationpb.New(0), istioDefault},
		{"timeout", "timeout: 3s", &durationpb.Duration{Seconds: 3}, istioDefault},
		{"retries disabled", "retries: {attempts: 0}", durationpb.New(0), nil},
		{"attempts and per-try timeout", "retries: {attempts: 5, perTryTimeout: 0.5s}", durationpb.New(0), &routev3.RetryPolicy{
			RetryOn: istioDefault.RetryOn, NumRetries: wrapperspb.UInt32(5),
			PerTryTimeout: &durationpb.Duration{Nanos: 500000000}, RetryHostPredicate: previousHosts(), HostSelectionRetryMaxAttempts: 5}},
		{"retryOn with status codes", `retries: {attempts: 3, retryOn: "gateway-error,connect-failure,503,429"}`, durationpb.New(0), &routev3.RetryPolicy{
			RetryOn: "gateway-error,connect-failure,retriable-status-codes", NumRetries: wrapperspb.UInt32(3), RetriableStatusCodes: []uint32{503, 429},
			RetryHostPredicate: previousHosts(), HostSelectionRetryMaxAttempts: 5}},
		{"retryOn without codes", `retries: {attempts: 1, retryOn: "5xx", retryIgnorePreviousHosts: false, backoff: 0.1s}`, durationpb.New(0), &routev3.RetryPolicy{
			RetryOn: "5xx", NumRetries: wrapperspb.UInt32(1), HostSelectionRetryMaxAttempts: 5,
			RetryBackOff: &routev3.RetryPolicy_RetryBackOff{BaseInterval: &durationpb.Duration{Nanos: 100000000}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			http := "name: r\n"
			if c.http != "" {
				http += "    " + c.http + "\n"
			}
			a := oneRoute(t, http+"    route: [{destination: {host: reviews.default.svc.cluster.local}}]").GetRoute()
			protoEqual(t, "timeout", a.GetTimeout(), c.timeout)
			protoEqual(t, "grpc timeout cap", a.GetMaxStreamDuration(), &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: c.timeout})
			protoEqual(t, "retry policy", a.GetRetryPolicy(), c.retry)
		})
	}
	_, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", "  - retries: {attempts: 2, retryOn: \"5xx,sometimes\"}"+toReviews))
	if !hasError(errs, false, "spec.http[0].retries.retryOn", `unknown retry condition "sometimes"`) {
		t.Errorf("errors:\n%s", errString(errs))
	}
}

// Routes that set no retries share one default policy (and the hashed
// destinations' one); a route with overrides gets its own, and building it
// leaves the shared one as it was.
func TestRoutesWithoutRetriesShareTheDefaultPolicy(t *testing.T) {
	before := proto.Clone(sharedDefaultRetry)
	a := oneRoute(t, "name: a\n    route: [{destination: {host: reviews.default.svc.cluster.local}}]").GetRoute()
	b := oneRoute(t, "name: b\n    timeout: 2s\n    route: [{destination: {host: reviews.default.svc.cluster.local}}]").GetRoute()
	if a.GetRetryPolicy() != sharedDefaultRetry || b.GetRetryPolicy() != sharedDefaultRetry {
		t.Errorf("routes without retries have their own policies")
	}
	c := oneRoute(t, `name: c
    retries: {attempts: 4, retryOn: "5xx,503", retryIgnorePreviousHosts: false, retryRemoteLocalities: true, perTryTimeout: 1s}
    route: [{destination: {host: reviews.default.svc.cluster.local}}]`).GetRoute()
	if c.GetRetryPolicy() == sharedDefaultRetry || c.GetRetryPolicy().GetNumRetries().GetValue() != 4 {
		t.Errorf("route with retries: policy %v", c.GetRetryPolicy())
	}
	if !proto.Equal(sharedDefaultRetry, before) || len(sharedHashRetry.GetRetryHostPredicate()) != 0 || !proto.Equal(sharedPreviousHosts, before.(*routev3.RetryPolicy).GetRetryHostPredicate()[0]) {
		t.Errorf("shared default changed: %v", sharedDefaultRetry)
	}
}

func TestMirrors(t *testing.T) {
	mirror := func(cluster string, pct *typev3.FractionalPercent) *routev3.RouteAction_RequestMirrorPolicy {
		return &routev3.RouteAction_RequestMirrorPolicy{Cluster: cluster, RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: pct}, TraceSampled: wrapperspb.Bool(false),
			DisableShadowHostSuffixAppend: true}
	}
	cases := []struct {
		name, http string
		want       []*routev3.RouteAction_RequestMirrorPolicy
	}{
		{"mirror defaults to all", `mirror: {host: ratings.default.svc.cluster.local}`,
			[]*routev3.RouteAction_RequestMirrorPolicy{mirror("outbound|8080||ratings.default.svc.cluster.local", wholePercent(100))}},
		{"mirror percentage", `mirror: {host: reviews.default.svc.cluster.local, subset: v2}
    mirrorPercentage: {value: 12.5}`,
			[]*routev3.RouteAction_RequestMirrorPolicy{mirror("outbound|9080|v2|reviews.default.svc.cluster.local",
				&typev3.FractionalPercent{Numerator: 125000, Denominator: typev3.FractionalPercent_MILLION})}},
		{"zero percentage mirrors nothing", `mirror: {host: ratings.default.svc.cluster.local}
    mirrorPercentage: {value: 0}`, nil},
		{"mirrors", `mirrors:
    - destination: {host: ratings.default.svc.cluster.local}
      percentage: {value: 50}
    - destination: {host: multi.default.svc.cluster.local, port: {number: 80}}`,
			[]*routev3.RouteAction_RequestMirrorPolicy{
				mirror("outbound|8080||ratings.default.svc.cluster.local", &typev3.FractionalPercent{Numerator: 500000, Denominator: typev3.FractionalPercent_MILLION}),
				mirror("outbound|80||multi.default.svc.cluster.local", wholePercent(100)),
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := oneRoute(t, c.http+toReviews).GetRoute()
			got := a.GetRequestMirrorPolicies()
			if len(got) != len(c.want) {
				t.Fatalf("mirrors = %v, want %v", got, c.want)
			}
			for i := range got {
				protoEqual(t, "mirror", got[i], c.want[i])
			}
		})
	}
}

func TestHeaderOperations(t *testing.T) {
	rcs, errs := build(t, fixtures, gatewayYAML, vs("v", "[foo.com]", `  - headers:
      request:
        set: {x-b: "2", x-a: "1"}
        add: {x-c: "3"}
        remove: [x-gone, ":path"]
      response:
        set: {cache-control: no-store}
        add: {x-served-by: gw}
        remove: [server]`+toReviews))
	r := onlyRoute(t, rcs)
	if len(errs) != 1 || !hasError(errs, true, "spec.http[0].headers.request.remove", "header :path cannot be removed; ignored") {
		t.Errorf("errors:\n%s", errString(errs))
	}
	hv := func(k, v string, a corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
		return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: v}, AppendAction: a}
	}
	const set, add = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD, corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	got := &routev3.Route{
		RequestHeadersToAdd: r.GetRequestHeadersToAdd(), RequestHeadersToRemove: r.GetRequestHeadersToRemove(),
		ResponseHeadersToAdd: r.GetResponseHeadersToAdd(), ResponseHeadersToRemove: r.GetResponseHeadersToRemove(),
	}
	protoEqual(t, "header operations", got, &routev3.Route{
		RequestHeadersToAdd:     []*corev3.HeaderValueOption{hv("x-a", "1", set), hv("x-b", "2", set), hv("x-c", "3", add)},
		RequestHeadersToRemove:  []string{"x-gone"},
		ResponseHeadersToAdd:    []*corev3.HeaderValueOption{hv("cache-control", "no-store", set), hv("x-served-by", "gw", add)},
		ResponseHeadersToRemove: []string{"server"},
	})
}
