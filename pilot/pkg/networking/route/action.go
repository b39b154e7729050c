package route

import (
	"fmt"
	"math"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// MaxDirectResponseBody is the limit on inline direct response bodies that
// every gateway RouteConfiguration sets (max_direct_response_body_size_bytes),
// istiod 1.29's DefaultMaxDirectResponseBodySizeBytes (1 MiB, also its
// webhook's limit) in place of Envoy's 4 KiB default. Envoy rejects a whole
// route configuration holding a larger body, so such a route is reported and
// left out instead.
const MaxDirectResponseBody = 1 << 20

// routeContext is what an HTTP route's translation depends on besides the
// route itself.
type routeContext struct {
	push *model.PushContext
	vs   *config.Config
	// port is the gateway port the route is served on.
	port uint32
	// tls is whether that port terminates TLS (for redirect defaults).
	tls bool
	// deps, when set, collects the destination hosts looked up in push
	// (what a cached translation depends on besides the VirtualService).
	deps *[]string
	// sessions are the VirtualService's routes' sessions, by route name
	// (model.GatewayAPISessionsAnnotation).
	sessions map[string]model.GatewayAPISession
}

// translateAction builds everything of an Envoy route but its match:
// name, action, header edits and per-filter config. It returns nil when the
// route cannot be used; the problems are reported through p.
func translateAction(ctx routeContext, in *networking.HTTPRoute, field string, p *problems) *routev3.Route {
	out := &routev3.Route{Name: in.GetName()}
	var authority string
	if in.GetHeaders() != nil {
		ops := translateHeaders(in.GetHeaders(), field+".headers", p)
		out.RequestHeadersToAdd, out.RequestHeadersToRemove = ops.requestAdd, ops.requestRemove
		out.ResponseHeadersToAdd, out.ResponseHeadersToRemove = ops.responseAdd, ops.responseRemove
		authority = ops.authority
	}

	switch {
	case in.GetDelegate() != nil:
		p.errorf(field+".delegate", "delegate VirtualServices are not supported")
	case in.GetRedirect() != nil:
		warnIgnored(in, field, "redirect", p)
		out.Action = &routev3.Route_Redirect{Redirect: translateRedirect(in.GetRedirect(), ctx, field+".redirect", p)}
	case in.GetDirectResponse() != nil:
		warnIgnored(in, field, "directResponse", p)
		out.Action = &routev3.Route_DirectResponse{DirectResponse: translateDirectResponse(in.GetDirectResponse(), field+".directResponse", p)}
	case len(in.GetRoute()) > 0:
		out.Action = &routev3.Route_Route{Route: translateRouteAction(ctx, in, out, authority, field, p)}
	default:
		p.errorf(field, "one of route, redirect or directResponse is required")
	}

	if in.GetFault() != nil {
		if f := translateFault(in.GetFault(), field+".fault", p); f != nil {
			setFilterConfig(out, FaultFilterName, f, field+".fault", p)
		}
	}
	if in.GetCorsPolicy() != nil {
		setFilterConfig(out, CORSFilterName, translateCORS(in.GetCorsPolicy(), field+".corsPolicy", p), field+".corsPolicy", p)
	}
	if ctx.sessions != nil {
		if s, ok := ctx.sessions[in.GetName()]; ok && out.GetRoute() != nil {
			ss, err := statefulSession(s)
			if err != nil {
				p.errorf(field, "session persistence: %v", err)
			} else {
				setFilterConfig(out, StatefulSessionFilterName, ss, field, p)
			}
		}
	}
	if p.fatal {
		return nil
	}
	return out
}

// warnIgnored reports the destinations a redirect or direct response wins over.
func warnIgnored(in *networking.HTTPRoute, field, winner string, p *problems) {
	if len(in.GetRoute()) > 0 {
		p.warnf(field+".route", "ignored: %s takes precedence", winner)
	}
	if winner == "redirect" && in.GetDirectResponse() != nil {
		p.warnf(field+".directResponse", "ignored: redirect takes precedence")
	}
}

func setFilterConfig(out *routev3.Route, name string, m protoconv.Validatable, field string, p *problems) {
	a, err := protoconv.ValidatedAny(m)
	if err != nil {
		p.errorf(field, "invalid: %v", err)
		return
	}
	if out.TypedPerFilterConfig == nil {
		out.TypedPerFilterConfig = map[string]*anypb.Any{}
	}
	out.TypedPerFilterConfig[name] = a
}

// translateRouteAction builds a forwarding action: destinations, rewrites,
// timeout, retries and mirrors. Per-destination header edits of a single
// destination go on out.
func translateRouteAction(ctx routeContext, in *networking.HTTPRoute, out *routev3.Route, authority, field string, p *problems) *routev3.RouteAction {
	action := &routev3.RouteAction{}

	// Istio's gateway default is no timeout (0s disables Envoy's 15s one);
	// gRPC's grpc-timeout header is capped by the same value.
	timeout := sharedNoTimeout
	if t := in.GetTimeout(); t != nil {
		if t.AsDuration() < 0 {
			p.errorf(field+".timeout", "must not be negative")
		}
		timeout = t
	}
	action.Timeout = timeout
	action.MaxStreamDuration = sharedStreamDurations.get(&routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: timeout})

	if rw := in.GetRewrite(); rw != nil {
		f := field + ".rewrite"
		if rr := rw.GetUriRegexRewrite(); rr != nil {
			if rw.GetUri() != "" {
				p.warnf(f+".uri", "ignored: uriRegexRewrite takes precedence")
			}
			action.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
				Pattern:      regexMatcher(rr.GetMatch(), f+".uriRegexRewrite.match", p),
				Substitution: rr.GetRewrite(),
			}
		} else if rw.GetUri() != "" {
			// With an exact or regex match Envoy swaps the whole path.
			action.PrefixRewrite = rw.GetUri()
		}
		if rw.GetAuthority() != "" {
			authority = rw.GetAuthority()
		}
	}
	if authority != "" {
		action.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: authority}
	}

	dsts := in.GetRoute()
	// With a single sticky destination, retries stay on the hashed host.
	consistentHash := false
	if len(dsts) == 1 {
		f := field + ".route[0]"
		d := resolveDestination(ctx, dsts[0].GetDestination(), f+".destination", p)
		action.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: d.cluster}
		if hp := d.hashPolicy(ctx.push); hp != nil {
			action.HashPolicy = []*routev3.RouteAction_HashPolicy{hp}
			consistentHash = true
		}
		if dsts[0].GetHeaders() != nil {
			ops := translateHeaders(dsts[0].GetHeaders(), f+".headers", p)
			out.RequestHeadersToAdd = append(out.RequestHeadersToAdd, ops.requestAdd...)
			out.RequestHeadersToRemove = append(out.RequestHeadersToRemove, ops.requestRemove...)
			out.ResponseHeadersToAdd = append(out.ResponseHeadersToAdd, ops.responseAdd...)
			out.ResponseHeadersToRemove = append(out.ResponseHeadersToRemove, ops.responseRemove...)
			// The route-level rewrite wins, as it would for a weighted destination.
			if ops.authority != "" && action.HostRewriteSpecifier == nil {
				action.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: ops.authority}
			}
		}
	} else {
		var wc *routev3.WeightedCluster
		wc, action.HashPolicy = weightedClusters(ctx, dsts, field, p)
		action.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	}

	if namesInvalidBackend(dsts) {
		// The Gateway API's share of invalid backends: the cluster is
		// never generated, and Envoy answers it with this code (see
		// model.InvalidBackendHost).
		action.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
	}

	action.RetryPolicy = translateRetries(in.GetRetries(), consistentHash, field+".retries", p)

	if m := in.GetMirror(); m != nil {
		mp := mirrorPercent(in)
		if mp != nil {
			action.RequestMirrorPolicies = append(action.RequestMirrorPolicies, mirrorPolicy(destinationCluster(ctx, m, field+".mirror", p), mp))
		}
	}
	for i, m := range in.GetMirrors() {
		f := fmt.Sprintf("%s.mirrors[%d]", field, i)
		if m.GetDestination() == nil {
			p.errorf(f+".destination", "is required")
			continue
		}
		pct := &corev3.RuntimeFractionalPercent{DefaultValue: wholePercent(100)}
		if m.GetPercentage() != nil {
			if m.GetPercentage().GetValue() <= 0 {
				continue
			}
			pct = &corev3.RuntimeFractionalPercent{DefaultValue: percent(m.GetPercentage())}
		}
		action.RequestMirrorPolicies = append(action.RequestMirrorPolicies, mirrorPolicy(destinationCluster(ctx, m.GetDestination(), f+".destination", p), pct))
	}
	return action
}

// weightedClusters splits traffic between several destinations. Zero-weight
// destinations get no traffic and are left out, as in Istio. It also
// returns the distinct hash policies of the destinations' rules.
func weightedClusters(ctx routeContext, dsts []*networking.HTTPRouteDestination, field string, p *problems) (*routev3.WeightedCluster, []*routev3.RouteAction_HashPolicy) {
	out := &routev3.WeightedCluster{}
	var hashes []*routev3.RouteAction_HashPolicy
	for j, d := range dsts {
		f := fmt.Sprintf("%s.route[%d]", field, j)
		if d.GetWeight() < 0 {
			p.errorf(f+".weight", "must not be negative")
			continue
		}
		if d.GetWeight() == 0 {
			continue
		}
		rd := resolveDestination(ctx, d.GetDestination(), f+".destination", p)
		if hp := rd.hashPolicy(ctx.push); hp != nil && !slices.ContainsFunc(hashes, func(o *routev3.RouteAction_HashPolicy) bool { return proto.Equal(o, hp) }) {
			hashes = append(hashes, hp)
		}
		cw := &routev3.WeightedCluster_ClusterWeight{
			Name:   rd.cluster,
			Weight: weight(uint32(d.GetWeight())),
		}
		if d.GetHeaders() != nil {
			ops := translateHeaders(d.GetHeaders(), f+".headers", p)
			cw.RequestHeadersToAdd, cw.RequestHeadersToRemove = ops.requestAdd, ops.requestRemove
			cw.ResponseHeadersToAdd, cw.ResponseHeadersToRemove = ops.responseAdd, ops.responseRemove
			if ops.authority != "" {
				cw.HostRewriteSpecifier = &routev3.WeightedCluster_ClusterWeight_HostRewriteLiteral{HostRewriteLiteral: ops.authority}
			}
		}
		out.Clusters = append(out.Clusters, cw)
	}
	if len(out.Clusters) == 0 {
		p.errorf(field+".route", "every destination has weight 0; at least one needs a positive weight")
	}
	// Envoy adds the weights up in 32 bits and rejects the route table
	// when the sum overflows.
	var total uint64
	for _, c := range out.Clusters {
		total += uint64(c.GetWeight().GetValue())
	}
	if total > math.MaxUint32 {
		p.errorf(field+".route", "the weights add up to %d, more than Envoy's limit of %d; scale them down", total, uint32(math.MaxUint32))
	}
	return out, hashes
}

// destinationCluster names the cluster for dst: outbound|PORT|SUBSET|HOST.
// The port is the destination's, or the service's only port; a subset must
// be defined by the host's DestinationRule.
func destinationCluster(ctx routeContext, dst *networking.Destination, field string, p *problems) string {
	return resolveDestination(ctx, dst, field, p).cluster
}

// resolvedDestination is a destination with its host and port worked out.
type resolvedDestination struct {
	cluster string
	host    string
	port    uint32
	subset  string
}

// hashPolicy is the hash policy the destination's DestinationRule asks
// for, or nil.
func (d resolvedDestination) hashPolicy(push *model.PushContext) *routev3.RouteAction_HashPolicy {
	if d.host == "" {
		return nil
	}
	return hashPolicy(consistentHashFor(push, d.host, d.port, d.subset))
}

func resolveDestination(ctx routeContext, dst *networking.Destination, field string, p *problems) resolvedDestination {
	if dst.GetHost() == model.InvalidBackendHost {
		// Never looked up: see model.InvalidBackendHost.
		return resolvedDestination{cluster: model.InvalidBackendCluster}
	}
	host := ctx.push.ResolveShortname(dst.GetHost(), ctx.vs.Namespace)
	if host == "" {
		p.errorf(field+".host", "is required")
		return resolvedDestination{}
	}
	if ctx.deps != nil {
		*ctx.deps = append(*ctx.deps, host)
	}
	svc := ctx.push.ServiceForHost(host)
	port := dst.GetPort().GetNumber()
	switch {
	case port == 0 && svc == nil:
		p.errorf(field+".port", "is required: no service is defined for host %s to take the port from", host)
	case port == 0 && len(svc.Ports) != 1:
		p.errorf(field+".port", "is required: service %s has %d ports", host, len(svc.Ports))
	case port == 0:
		port = svc.Ports[0].Number
	case svc == nil:
		p.warnf(field+".host", "no service is defined for host %s; requests routed to it will fail until one is", host)
	default:
		if _, ok := svc.Port(port); !ok {
			p.warnf(field+".port.number", "service %s has no port %d; requests routed to it will fail", host, port)
		}
	}
	if s := dst.GetSubset(); s != "" && ctx.push.Subset(host, s) == nil {
		p.errorf(field+".subset", "subset %q is not defined by any DestinationRule for host %s", s, host)
	}
	return resolvedDestination{cluster: model.ClusterName(port, dst.GetSubset(), host), host: host, port: port, subset: dst.GetSubset()}
}

// namesInvalidBackend reports whether a destination with traffic is
// model.InvalidBackendHost.
func namesInvalidBackend(dsts []*networking.HTTPRouteDestination) bool {
	for _, d := range dsts {
		if d.GetDestination().GetHost() == model.InvalidBackendHost && (d.GetWeight() > 0 || len(dsts) == 1) {
			return true
		}
	}
	return false
}

// mirrorPercent is the share of traffic the single mirror gets: all of it
// unless a percentage is given; nil (no mirroring) for an explicit zero.
func mirrorPercent(in *networking.HTTPRoute) *corev3.RuntimeFractionalPercent {
	switch {
	case in.GetMirrorPercentage() != nil:
		if in.GetMirrorPercentage().GetValue() <= 0 {
			return nil
		}
		return &corev3.RuntimeFractionalPercent{DefaultValue: percent(in.GetMirrorPercentage())}
	case in.GetMirrorPercent() != nil: //nolint:staticcheck // deprecated, still honoured
		if in.GetMirrorPercent().GetValue() == 0 { //nolint:staticcheck
			return nil
		}
		return &corev3.RuntimeFractionalPercent{DefaultValue: wholePercent(in.GetMirrorPercent().GetValue())} //nolint:staticcheck
	}
	return &corev3.RuntimeFractionalPercent{DefaultValue: wholePercent(100)}
}

func mirrorPolicy(cluster string, pct *corev3.RuntimeFractionalPercent) *routev3.RouteAction_RequestMirrorPolicy {
	// Mirrored requests do not force trace sampling, and keep their Host:
	// Envoy would append "-shadow" to it, which istiod 1.29 turns off
	// (DISABLE_SHADOW_HOST_SUFFIX, default true; route.go
	// TranslateRequestMirrorPolicy).
	return &routev3.RouteAction_RequestMirrorPolicy{Cluster: cluster, RuntimeFraction: pct, TraceSampled: wrapperspb.Bool(false),
		DisableShadowHostSuffixAppend: true}
}

// translateRedirect builds a redirect. A port taken from the request is
// the gateway port; a port that is the scheme's default is left out.
func translateRedirect(in *networking.HTTPRedirect, ctx routeContext, field string, p *problems) *routev3.RedirectAction {
	out := &routev3.RedirectAction{HostRedirect: in.GetAuthority()}
	switch {
	case in.GetUri() != "" && in.GetPrefixRewrite() != "":
		p.errorf(field, "uri and prefixRewrite are mutually exclusive")
	case in.GetUri() != "":
		out.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: in.GetUri()}
	case in.GetPrefixRewrite() != "":
		out.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: in.GetPrefixRewrite()}
	}
	if in.GetScheme() != "" {
		out.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: in.GetScheme()}
	}
	if in.GetRedirectPort() != nil {
		switch rp := in.GetRedirectPort().(type) {
		case *networking.HTTPRedirect_Port:
			out.PortRedirect = rp.Port
		case *networking.HTTPRedirect_DerivePort:
			if rp.DerivePort == networking.HTTPRedirect_FROM_REQUEST_PORT {
				out.PortRedirect = ctx.port
			}
		}
		scheme := in.GetScheme()
		if scheme == "" {
			scheme = "http"
			if ctx.tls {
				scheme = "https"
			}
		}
		if (out.PortRedirect == 80 && scheme == "http") || (out.PortRedirect == 443 && scheme == "https") {
			out.PortRedirect = 0
		}
	}
	switch in.GetRedirectCode() {
	case 0, 301:
		out.ResponseCode = routev3.RedirectAction_MOVED_PERMANENTLY
	case 302:
		out.ResponseCode = routev3.RedirectAction_FOUND
	case 303:
		out.ResponseCode = routev3.RedirectAction_SEE_OTHER
	case 307:
		out.ResponseCode = routev3.RedirectAction_TEMPORARY_REDIRECT
	case 308:
		out.ResponseCode = routev3.RedirectAction_PERMANENT_REDIRECT
	default:
		p.errorf(field+".redirectCode", "%d is not a supported redirect code (301, 302, 303, 307, 308)", in.GetRedirectCode())
	}
	return out
}

// translateDirectResponse answers the request from the gateway itself.
func translateDirectResponse(in *networking.HTTPDirectResponse, field string, p *problems) *routev3.DirectResponseAction {
	out := &routev3.DirectResponseAction{Status: in.GetStatus()}
	if in.GetStatus() < 200 || in.GetStatus() >= 600 {
		p.errorf(field+".status", "%d is not an HTTP status (200-599)", in.GetStatus())
	}
	switch b := in.GetBody().GetSpecifier().(type) {
	case *networking.HTTPBody_String_:
		out.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: b.String_}}
		if len(b.String_) > MaxDirectResponseBody {
			p.errorf(field+".body.string", "%d bytes is over Envoy's %d byte limit", len(b.String_), MaxDirectResponseBody)
		}
	case *networking.HTTPBody_Bytes:
		out.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b.Bytes}}
		if len(b.Bytes) > MaxDirectResponseBody {
			p.errorf(field+".body.bytes", "%d bytes is over Envoy's %d byte limit", len(b.Bytes), MaxDirectResponseBody)
		}
	}
	return out
}
