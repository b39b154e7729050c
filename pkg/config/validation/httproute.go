package validation

import (
	"strconv"
	"strings"
	"time"

	networking "istio.io/api/networking/v1alpha3"
)

// maxDirectResponseBody bounds an inline response body: it is copied into
// every route configuration that uses it.
const maxDirectResponseBody = 1 << 20

// supportedRedirectCodes are the codes Envoy's redirect action can send.
var supportedRedirectCodes = map[uint32]bool{301: true, 302: true, 303: true, 307: true, 308: true}

// retryOnPolicies are the retry conditions Envoy understands, from
// x-envoy-retry-on and x-envoy-retry-grpc-on. A status code is also allowed.
var retryOnPolicies = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true,
	"connect-failure": true, "retriable-4xx": true, "refused-stream": true,
	"retriable-status-codes": true, "retriable-headers": true, "envoy-ratelimited": true,
	"http3-post-connect-failure": true,
	"cancelled":                  true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true,
}

// grpcStatuses are the canonical gRPC status code names a fault may abort with.
var grpcStatuses = map[string]bool{
	"OK": true, "CANCELLED": true, "UNKNOWN": true, "INVALID_ARGUMENT": true, "DEADLINE_EXCEEDED": true,
	"NOT_FOUND": true, "ALREADY_EXISTS": true, "PERMISSION_DENIED": true, "RESOURCE_EXHAUSTED": true,
	"FAILED_PRECONDITION": true, "ABORTED": true, "OUT_OF_RANGE": true, "UNIMPLEMENTED": true,
	"INTERNAL": true, "UNAVAILABLE": true, "DATA_LOSS": true, "UNAUTHENTICATED": true,
}

// corsMethods are the methods a CORS policy may allow.
var corsMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "CONNECT": true, "OPTIONS": true, "TRACE": true,
}

func (v *validator) httpRoute(f string, r *networking.HTTPRoute, ctx vsContext) {
	v.httpAction(f, r, ctx)
	// Delegation merges matches by prefix and exact comparison, which a
	// regex defeats; Istio refuses regexes on both sides of a delegation.
	noRegex := ctx.delegate || r.Delegate != nil
	for i, m := range r.Match {
		v.httpMatch(at(f+".match", i), m, ctx, noRegex)
	}
	for i, rd := range r.Route {
		df := at(f+".route", i)
		if rd == nil {
			v.add(df, "route destination must not be null")
			continue
		}
		v.destination(df+".destination", rd.Destination)
		v.headerOperations(df+".headers", rd.Headers)
	}
	if len(r.Route) > 0 {
		weights := make([]int32, len(r.Route))
		for i, rd := range r.Route {
			weights[i] = rd.GetWeight()
		}
		v.weights(f+".route", weights)
	}
	v.redirect(f+".redirect", r.Redirect)
	v.directResponse(f+".directResponse", r.DirectResponse)
	v.rewrite(f, r)
	v.headerOperations(f+".headers", r.Headers)
	v.checkDuration(f+".timeout", r.Timeout, 0)
	v.retries(f+".retries", r.Retries)
	v.fault(f+".fault", r.Fault)
	v.mirrors(f, r)
	v.cors(f+".corsPolicy", r.CorsPolicy)
}

// httpAction checks that the route does exactly one thing: forward,
// redirect, respond directly, or delegate.
func (v *validator) httpAction(f string, r *networking.HTTPRoute, ctx vsContext) {
	var actions []string
	if len(r.Route) > 0 {
		actions = append(actions, "route")
	}
	if r.Redirect != nil {
		actions = append(actions, "redirect")
	}
	if r.DirectResponse != nil {
		actions = append(actions, "directResponse")
	}
	if r.Delegate != nil {
		actions = append(actions, "delegate")
	}
	switch len(actions) {
	case 0:
		v.add(f, "one of route, redirect, directResponse or delegate is required")
	case 1:
	default:
		v.add(f, "%s are mutually exclusive; set only one", strings.Join(actions, " and "))
	}
	if r.Redirect != nil {
		if r.Rewrite != nil {
			v.add(f+".rewrite", "rewrite cannot be combined with redirect")
		}
		if r.Fault != nil {
			v.add(f+".fault", "fault cannot be combined with redirect")
		}
	}
	if d := r.Delegate; d != nil {
		if ctx.delegate {
			v.add(f+".delegate", "a delegate VirtualService cannot delegate further")
		}
		switch {
		case d.Name == "":
			v.add(f+".delegate.name", "name of the delegate VirtualService is required")
		case !isDNS1123Subdomain(d.Name):
			v.add(f+".delegate.name", "%q is not a valid VirtualService name", d.Name)
		}
		if d.Namespace != "" && !isDNS1123Label(d.Namespace) {
			v.add(f+".delegate.namespace", "%q is not a namespace name", d.Namespace)
		}
	}
}

func (v *validator) httpMatch(f string, m *networking.HTTPMatchRequest, ctx vsContext, noRegex bool) {
	if m == nil {
		v.add(f, "match must not be null")
		return
	}
	for _, sm := range []struct {
		name  string
		match *networking.StringMatch
	}{{"uri", m.Uri}, {"scheme", m.Scheme}, {"method", m.Method}, {"authority", m.Authority}} {
		v.matchValue(f+"."+sm.name, sm.match, noRegex)
	}
	v.headerMatches(f+".headers", m.Headers, ctx, noRegex)
	v.headerMatches(f+".withoutHeaders", m.WithoutHeaders, ctx, noRegex)
	for _, name := range sortedKeys(m.QueryParams) {
		qf := key(f+".queryParams", name)
		if name == "" {
			v.add(qf, "query parameter name must not be empty")
		}
		v.matchValue(qf, m.QueryParams[name], noRegex)
	}
	if m.Port != 0 {
		v.checkPort(f+".port", m.Port)
	}
	v.labels(f+".sourceLabels", m.SourceLabels)
	v.gatewayNames(f+".gateways", m.Gateways)
	if m.SourceNamespace != "" && !isDNS1123Label(m.SourceNamespace) {
		v.add(f+".sourceNamespace", "%q is not a namespace name", m.SourceNamespace)
	}
}

func (v *validator) matchValue(f string, sm *networking.StringMatch, noRegex bool) {
	if _, isRegex := sm.GetMatchType().(*networking.StringMatch_Regex); isRegex && noRegex {
		v.add(f+".regex", "regex matches cannot be used with delegation")
		return
	}
	v.stringMatch(f, sm)
}

// headerMatches checks header match names: header names (RFC 9110 tokens;
// upper case is allowed, as in istiod: names are matched without case and
// the translators lower-case them with a warning), or, on gateways, Istio's
// "@request.auth.claims.NAME" JWT claim form.
func (v *validator) headerMatches(f string, headers map[string]*networking.StringMatch, ctx vsContext, noRegex bool) {
	for _, name := range sortedKeys(headers) {
		hf := key(f, name)
		switch claim, isClaim := strings.CutPrefix(name, "@request.auth.claims."); {
		case isClaim && claim != "":
			if !ctx.gateway {
				v.add(hf, "JWT claim matches are only supported on VirtualServices bound to gateways")
			}
		case !isToken(name):
			v.add(hf, "%q is not a valid header name: use letters, digits, '-' and '_'", name)
		}
		if headers[name] == nil {
			v.add(hf, "header match must not be null; use {} to match on presence")
			continue
		}
		v.matchValue(hf, headers[name], noRegex)
	}
}

func (v *validator) redirect(f string, r *networking.HTTPRedirect) {
	if r == nil {
		return
	}
	if r.Uri == "" && r.Authority == "" && r.RedirectPort == nil && r.Scheme == "" && r.PrefixRewrite == "" {
		v.add(f, "redirect must set at least one of uri, prefixRewrite, authority, scheme, port or derivePort")
	}
	if r.Uri != "" && r.PrefixRewrite != "" {
		v.add(f+".prefixRewrite", "uri and prefixRewrite are mutually exclusive")
	}
	if r.RedirectCode != 0 && !supportedRedirectCodes[r.RedirectCode] {
		v.add(f+".redirectCode", "redirect code %d is not supported; use 301, 302, 303, 307 or 308", r.RedirectCode)
	}
	if r.Scheme != "" && r.Scheme != "http" && r.Scheme != "https" {
		v.add(f+".scheme", `scheme %q must be "http" or "https"`, r.Scheme)
	}
	switch p := r.RedirectPort.(type) {
	case *networking.HTTPRedirect_Port:
		v.checkPort(f+".port", p.Port)
	case *networking.HTTPRedirect_DerivePort:
		v.checkEnum(f+".derivePort", networking.HTTPRedirect_RedirectPortSelection_name, int32(p.DerivePort))
	}
}

func (v *validator) directResponse(f string, d *networking.HTTPDirectResponse) {
	if d == nil {
		return
	}
	if d.Status < 200 || d.Status > 599 {
		v.add(f+".status", "status %d must be in the range 200-599", d.Status)
	}
	size := 0
	switch b := d.GetBody().GetSpecifier().(type) {
	case *networking.HTTPBody_String_:
		size = len(b.String_)
	case *networking.HTTPBody_Bytes:
		size = len(b.Bytes)
	}
	if size > maxDirectResponseBody {
		v.add(f+".body", "body is %d bytes; at most %d are allowed", size, maxDirectResponseBody)
	}
}

func (v *validator) rewrite(f string, r *networking.HTTPRoute) {
	rw := r.Rewrite
	if rw != nil {
		rf := f + ".rewrite"
		switch {
		case rw.Uri != "" && rw.UriRegexRewrite != nil:
			v.add(rf, "uri and uriRegexRewrite are mutually exclusive")
		case rw.Uri == "" && rw.UriRegexRewrite == nil && rw.Authority == "":
			v.add(rf, "rewrite must set uri, uriRegexRewrite or authority")
		}
		if re := rw.UriRegexRewrite; re != nil {
			v.checkRegex(rf+".uriRegexRewrite.match", re.Match)
			if re.Rewrite == "" {
				v.add(rf+".uriRegexRewrite.rewrite", "rewrite is required")
			}
		}
	}
	// The authority can be rewritten in one place only; Envoy would apply
	// one and silently drop the other.
	set := 0
	if rw.GetAuthority() != "" {
		set++
	}
	req := r.GetHeaders().GetRequest()
	for _, m := range []map[string]string{req.GetSet(), req.GetAdd()} {
		for name := range m {
			if isAuthorityHeader(name) {
				set++
			}
		}
	}
	if set > 1 {
		v.add(f+".headers.request", "the authority is rewritten more than once (rewrite.authority and :authority/host headers); keep one")
	}
}

func (v *validator) retries(f string, r *networking.HTTPRetry) {
	if r == nil {
		return
	}
	if r.Attempts < 0 {
		v.add(f+".attempts", "attempts %d must not be negative", r.Attempts)
	} else if r.Attempts == 0 && (r.PerTryTimeout != nil || r.RetryOn != "" || r.RetryRemoteLocalities != nil) {
		v.add(f+".attempts", "attempts is 0, which disables retries, but other retry settings are set")
	}
	v.checkDuration(f+".perTryTimeout", r.PerTryTimeout, 0)
	// Envoy requires a positive backoff base interval.
	v.checkDuration(f+".backoff", r.Backoff, time.Millisecond)
	if r.RetryOn != "" {
		for _, p := range strings.Split(r.RetryOn, ",") {
			if retryOnPolicies[p] {
				continue
			}
			if code, err := strconv.Atoi(p); err == nil && code >= 100 && code <= 599 {
				continue
			}
			v.add(f+".retryOn", "%q is not a retry condition Envoy knows (such as 5xx, gateway-error, reset, connect-failure, retriable-4xx) or a status code", p)
		}
	}
}

func (v *validator) fault(f string, ft *networking.HTTPFaultInjection) {
	if ft == nil {
		return
	}
	if ft.Delay == nil && ft.Abort == nil {
		v.add(f, "fault must set a delay, an abort, or both")
	}
	if d := ft.Delay; d != nil {
		df := f + ".delay"
		if d.Percent < 0 || d.Percent > 100 {
			v.add(df+".percent", "percent %d must be in the range 0-100", d.Percent)
		}
		if d.Percentage != nil {
			v.checkPercent(df+".percentage.value", d.Percentage.Value)
		}
		switch t := d.HttpDelayType.(type) {
		case *networking.HTTPFaultInjection_Delay_FixedDelay:
			if t.FixedDelay == nil {
				v.add(df+".fixedDelay", "fixedDelay is required")
			}
			v.checkDuration(df+".fixedDelay", t.FixedDelay, time.Millisecond)
		case *networking.HTTPFaultInjection_Delay_ExponentialDelay:
			v.add(df+".exponentialDelay", "exponentialDelay is not supported; use fixedDelay")
		default:
			v.add(df+".fixedDelay", "fixedDelay is required")
		}
	}
	if a := ft.Abort; a != nil {
		af := f + ".abort"
		if a.Percentage != nil {
			v.checkPercent(af+".percentage.value", a.Percentage.Value)
		}
		switch t := a.ErrorType.(type) {
		case *networking.HTTPFaultInjection_Abort_HttpStatus:
			if t.HttpStatus < 200 || t.HttpStatus > 599 {
				v.add(af+".httpStatus", "status %d must be in the range 200-599", t.HttpStatus)
			}
		case *networking.HTTPFaultInjection_Abort_GrpcStatus:
			if !grpcStatuses[t.GrpcStatus] {
				v.add(af+".grpcStatus", "%q is not a gRPC status code name (such as UNAVAILABLE or NOT_FOUND)", t.GrpcStatus)
			}
		case *networking.HTTPFaultInjection_Abort_Http2Error:
			v.add(af+".http2Error", "http2Error is not supported; use httpStatus or grpcStatus")
		default:
			v.add(af, "abort must set httpStatus or grpcStatus")
		}
	}
}

func (v *validator) mirrors(f string, r *networking.HTTPRoute) {
	if r.Mirror != nil {
		v.destination(f+".mirror", r.Mirror)
	}
	if r.MirrorPercent != nil && r.MirrorPercent.Value > 100 {
		v.add(f+".mirrorPercent", "percent %d must be in the range 0-100", r.MirrorPercent.Value)
	}
	if r.MirrorPercentage != nil {
		v.checkPercent(f+".mirrorPercentage.value", r.MirrorPercentage.Value)
	}
	if r.Mirror != nil && len(r.Mirrors) > 0 {
		v.add(f+".mirrors", "mirror and mirrors are mutually exclusive")
	}
	for i, m := range r.Mirrors {
		mf := at(f+".mirrors", i)
		if m == nil {
			v.add(mf, "mirror must not be null")
			continue
		}
		v.destination(mf+".destination", m.Destination)
		if m.Percentage != nil {
			v.checkPercent(mf+".percentage.value", m.Percentage.Value)
		}
	}
}

func (v *validator) cors(f string, c *networking.CorsPolicy) {
	if c == nil {
		return
	}
	for i, o := range c.AllowOrigins {
		of := at(f+".allowOrigins", i)
		switch t := o.GetMatchType().(type) {
		case *networking.StringMatch_Exact:
			if t.Exact == "" {
				v.add(of+".exact", "origin must not be empty")
			}
		case *networking.StringMatch_Prefix:
			if t.Prefix == "" {
				v.add(of+".prefix", "origin prefix must not be empty")
			}
		case *networking.StringMatch_Regex:
			v.checkRegex(of+".regex", t.Regex)
		default:
			v.add(of, "origin match must set exact, prefix or regex")
		}
	}
	for i, o := range c.AllowOrigin {
		if o == "" {
			v.add(at(f+".allowOrigin", i), "origin must not be empty")
		}
	}
	for i, m := range c.AllowMethods {
		// "*" alone (all methods) is the Gateway API CORS filter's, which
		// Envoy echoes or answers as is.
		if !corsMethods[m] && (m != "*" || len(c.AllowMethods) > 1) {
			v.add(at(f+".allowMethods", i), "%q is not an HTTP method (GET, POST, ...; upper case) or * alone", m)
		}
	}
	for i, h := range c.AllowHeaders {
		if h != "*" && !isToken(h) {
			v.add(at(f+".allowHeaders", i), "%q is not a valid header name or *", h)
		}
	}
	for i, h := range c.ExposeHeaders {
		if h != "*" && !isToken(h) {
			v.add(at(f+".exposeHeaders", i), "%q is not a valid header name or *", h)
		}
	}
	if c.MaxAge != nil {
		// Access-Control-Max-Age is in whole seconds.
		if err := c.MaxAge.CheckValid(); err != nil {
			v.add(f+".maxAge", "invalid duration: %v", err)
		} else if d := c.MaxAge.AsDuration(); d < 0 || d%time.Second != 0 {
			v.add(f+".maxAge", "maxAge %v must be a non-negative whole number of seconds", d)
		}
	}
	v.checkEnum(f+".unmatchedPreflights", networking.CorsPolicy_UnmatchedPreflights_name, int32(c.UnmatchedPreflights))
}
