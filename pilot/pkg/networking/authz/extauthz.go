package authz

// External authorization (AuthorizationPolicy action CUSTOM): the ext_authz
// filters built from a mesh config extension provider of kind
// envoyExtAuthzHttp or envoyExtAuthzGrpc. Follows istiod 1.29's
// pilot/pkg/security/authz/builder/extauthz.go (buildExtAuthzHTTP,
// buildExtAuthzGRPC, generateHTTPConfig, generateGRPCConfig).
//
// How a CUSTOM policy is enforced (istiod's design, kept as is): the CUSTOM
// rules go into an RBAC filter as shadow rules only, named
// "istio-ext-authz-ns[NS]-policy[NAME]-rule[N]", with shadow stat prefix
// "istio_ext_authz_". When one of them matches, that RBAC filter writes the
// rule's name under its own dynamic metadata key
// "istio_ext_authz_shadow_effective_policy_id"; the ext_authz filter right
// after it is enabled only when that key's value starts with
// "istio-ext-authz" (filter_enabled_metadata), so only requests a CUSTOM
// rule matches are sent to the authorizer.

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extauthzhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extauthztcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

const (
	// extAuthzPolicyPrefix begins the name of every CUSTOM rule in the
	// shadow RBAC filter: istiod's policyName with IsCustomBuilder,
	// extAuthzPolicyPrefix + "-ns[NS]-policy[NAME]-rule[N]".
	extAuthzPolicyPrefix = "istio-ext-authz"
	// extAuthzShadowStatPrefix is the shadow_rules_stat_prefix of the
	// CUSTOM RBAC filter (istiod's RBACExtAuthzShadowRulesStatPrefix).
	// Envoy's RBAC filter prefixes the dynamic metadata keys it writes for
	// shadow rules with it, which is where extAuthzMetadataKey comes from.
	extAuthzShadowStatPrefix = "istio_ext_authz_"
	// extAuthzMetadataKey is the key, in the RBAC filter's dynamic
	// metadata namespace, holding the name of the shadow rule that
	// matched: istiod's RBACExtAuthzShadowRulesStatPrefix +
	// RBACShadowEffectivePolicyID.
	extAuthzMetadataKey = extAuthzShadowStatPrefix + "shadow_effective_policy_id"
	// extAuthzDefaultTimeout is istiod's timeoutOrDefault: 600s.
	extAuthzDefaultTimeoutSeconds = 600
	// extAuthzTCPStatPrefix is the network ext_authz filter's stat prefix.
	extAuthzTCPStatPrefix = "tcp."
)

// extAuthz is what one ext_authz provider gives the filter chains: the HTTP
// filter (every provider) and the network filter for TCP chains (gRPC
// providers only; istiod ignores a CUSTOM policy with an HTTP provider on
// TCP chains, so tcp is nil for those). Each goes right after the CUSTOM
// RBAC filter, whose shadow rules gate it.
type extAuthz struct {
	http *hcmv3.HttpFilter
	tcp  *listenerv3.Filter
}

// extAuthzError says why a provider cannot be served. A CUSTOM policy
// naming such a provider must deny what its rules match (istiod's
// getBadCustomDenyRules: an enforcing DENY RBAC whose policies are the
// CUSTOM rules renamed NAME + "-deny-due-to-bad-CUSTOM-action"), never
// allow: the ext_authz filter is not built, so nothing else would stop
// the request.
type extAuthzError struct {
	// Provider is the provider's name.
	Provider string
	// Problems are "field: what is wrong", fields as the mesh config
	// spells them ("envoyExtAuthzGrpc.service").
	Problems []string
}

func (e *extAuthzError) Error() string {
	return fmt.Sprintf("extension provider %q cannot be used for CUSTOM authorization: %s",
		e.Provider, strings.Join(e.Problems, "; "))
}

// buildExtAuthz builds the ext_authz filters of provider p, resolving its
// service through clusters (istiod's LookupCluster). Any error means the
// provider cannot be served, and the caller must deny (see extAuthzError);
// it is an *extAuthzError.
func buildExtAuthz(p *meshconfig.MeshConfig_ExtensionProvider, clusters ClusterResolver) (*extAuthz, error) {
	if p == nil {
		return nil, &extAuthzError{Provider: "", Problems: []string{"no such extension provider"}}
	}
	b := &extAuthzBuilder{err: &extAuthzError{Provider: p.GetName()}, clusters: clusters}
	var out *extAuthz
	switch k := p.GetProvider().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp:
		out = b.http(k.EnvoyExtAuthzHttp)
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc:
		out = b.grpc(k.EnvoyExtAuthzGrpc)
	default:
		b.problem("", "is %s, not an ext_authz provider (envoyExtAuthzHttp or envoyExtAuthzGrpc)", providerKind(p))
	}
	if len(b.err.Problems) > 0 {
		return nil, b.err
	}
	return out, nil
}

// extAuthzBuilder collects every problem of one provider, so that the
// report names them all at once.
type extAuthzBuilder struct {
	err      *extAuthzError
	clusters ClusterResolver
}

func (b *extAuthzBuilder) problem(field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	b.err.Problems = append(b.err.Problems, msg)
}

// target resolves the provider's service and port (istiod's parsePort
// and LookupCluster) to the authority (the service's hostname) and the
// cluster; ok is false when it cannot.
func (b *extAuthzBuilder) target(kind, service string, port uint32) (host, cluster string, ok bool) {
	ok = true
	if port < 1 || port > 65535 {
		b.problem(kind+".port", "must be in the range [1, 65535], found: %d", port)
		ok = false
	}
	if service == "" {
		b.problem(kind+".service", "must not be empty")
		return "", "", false
	}
	// "namespace/hostname" names the namespace; the hostname is what
	// follows (istiod splits at the one "/").
	host = service
	if parts := strings.Split(service, "/"); len(parts) == 2 {
		host = parts[1]
	}
	if !ok {
		return "", "", false
	}
	if b.clusters == nil {
		b.problem(kind+".service", "cannot resolve %s: no service registry", service)
		return "", "", false
	}
	cluster, err := b.clusters(service, port)
	if err != nil {
		b.problem(kind+".service", "%v", err)
		return "", "", false
	}
	if cluster == "" {
		b.problem(kind+".service", "%s port %d resolves to no cluster", service, port)
		return "", "", false
	}
	return host, cluster, true
}

// statusOnError is istiod's parseStatusOnError: empty, or a status code
// Envoy's StatusCode enum knows.
func (b *extAuthzBuilder) statusOnError(field, status string) *typev3.HttpStatus {
	if status == "" {
		return nil
	}
	code, err := strconv.ParseInt(status, 10, 32)
	if err != nil {
		b.problem(field, "invalid statusOnError %q: not a number", status)
		return nil
	}
	if _, ok := typev3.StatusCode_name[int32(code)]; !ok || code == 0 {
		b.problem(field, "unsupported statusOnError %s: not an HTTP status code Envoy supports", status)
		return nil
	}
	return &typev3.HttpStatus{Code: typev3.StatusCode(code)}
}

// http follows istiod's buildExtAuthzHTTP and generateHTTPConfig.
func (b *extAuthzBuilder) http(c *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider) *extAuthz {
	const kind = "envoyExtAuthzHttp"
	host, cluster, resolved := b.target(kind, c.GetService(), c.GetPort())
	status := b.statusOnError(kind+".statusOnError", c.GetStatusOnError())
	if pp := c.GetPathPrefix(); pp != "" {
		if _, err := url.Parse(pp); err != nil {
			b.problem(kind+".pathPrefix", "invalid pathPrefix %q: %v", pp, err)
		}
		if !strings.HasPrefix(pp, "/") {
			b.problem(kind+".pathPrefix", "must begin with `/`, found: %q", pp)
		}
	}
	for _, list := range []struct {
		field  string
		values []string
	}{
		{"includeRequestHeadersInCheck", c.GetIncludeRequestHeadersInCheck()},
		{"includeHeadersInCheck", c.GetIncludeHeadersInCheck()}, //nolint:staticcheck // istiod still reads the deprecated field
		{"headersToDownstreamOnDeny", c.GetHeadersToDownstreamOnDeny()},
		{"headersToDownstreamOnAllow", c.GetHeadersToDownstreamOnAllow()},
		{"headersToUpstreamOnAllow", c.GetHeadersToUpstreamOnAllow()},
	} {
		if slices.Contains(list.values, "*") {
			b.problem(kind+"."+list.field, "a single wildcard (\"*\") is not supported, change it to either prefix or suffix match")
		}
	}
	if !resolved || len(b.err.Problems) > 0 {
		return nil
	}

	service := &extauthzhttpv3.HttpService{
		PathPrefix: c.GetPathPrefix(),
		ServerUri: &corev3.HttpUri{
			// Envoy requires a URI but the filter does not use it: the
			// cluster is where the check goes.
			Uri:              "http://" + host,
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster},
			Timeout:          timeoutOrDefault(c.GetTimeout()),
		},
	}
	allowed := headerMatchers(c.GetIncludeRequestHeadersInCheck())
	if allowed == nil {
		// The deprecated includeHeadersInCheck counts only when the
		// new field is unset, as in istiod.
		allowed = headerMatchers(c.GetIncludeHeadersInCheck()) //nolint:staticcheck // see above
	}
	if extra := c.GetIncludeAdditionalHeadersInCheck(); len(extra) > 0 {
		req := &extauthzhttpv3.AuthorizationRequest{}
		for _, k := range slices.Sorted(maps.Keys(extra)) {
			req.HeadersToAdd = append(req.HeadersToAdd, &corev3.HeaderValue{Key: k, Value: extra[k]})
		}
		service.AuthorizationRequest = req
	}
	if len(c.GetHeadersToUpstreamOnAllow()) > 0 || len(c.GetHeadersToDownstreamOnDeny()) > 0 || len(c.GetHeadersToDownstreamOnAllow()) > 0 {
		service.AuthorizationResponse = &extauthzhttpv3.AuthorizationResponse{
			AllowedUpstreamHeaders:        headerMatchers(c.GetHeadersToUpstreamOnAllow()),
			AllowedClientHeaders:          headerMatchers(c.GetHeadersToDownstreamOnDeny()),
			AllowedClientHeadersOnSuccess: headerMatchers(c.GetHeadersToDownstreamOnAllow()),
		}
	}
	cfg := &extauthzhttpv3.ExtAuthz{
		StatusOnError:         status,
		FailureModeAllow:      c.GetFailOpen(),
		TransportApiVersion:   corev3.ApiVersion_V3,
		Services:              &extauthzhttpv3.ExtAuthz_HttpService{HttpService: service},
		FilterEnabledMetadata: extAuthzGate(wellknown.HTTPRoleBasedAccessControl),
		WithRequestBody:       bufferSettings(c.GetIncludeRequestBodyInCheck()),
		AllowedHeaders:        allowed,
		// istiod 1.29 does not read clearRouteCache; Wayfinder does (see
		// docs/config.md, Differences from istiod).
		ClearRouteCache: c.GetClearRouteCache(),
	}
	return b.filters(kind, cfg, nil)
}

// grpc follows istiod's buildExtAuthzGRPC and generateGRPCConfig.
func (b *extAuthzBuilder) grpc(c *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider) *extAuthz {
	const kind = "envoyExtAuthzGrpc"
	host, cluster, resolved := b.target(kind, c.GetService(), c.GetPort())
	status := b.statusOnError(kind+".statusOnError", c.GetStatusOnError())
	if !resolved || len(b.err.Problems) > 0 {
		return nil
	}
	grpcService := func() *corev3.GrpcService {
		return &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
				ClusterName: cluster,
				Authority:   host,
			}},
			Timeout: timeoutOrDefault(c.GetTimeout()),
		}
	}
	httpCfg := &extauthzhttpv3.ExtAuthz{
		StatusOnError:         status,
		FailureModeAllow:      c.GetFailOpen(),
		Services:              &extauthzhttpv3.ExtAuthz_GrpcService{GrpcService: grpcService()},
		FilterEnabledMetadata: extAuthzGate(wellknown.HTTPRoleBasedAccessControl),
		TransportApiVersion:   corev3.ApiVersion_V3,
		WithRequestBody:       bufferSettings(c.GetIncludeRequestBodyInCheck()),
		ClearRouteCache:       c.GetClearRouteCache(),
	}
	tcpCfg := &extauthztcpv3.ExtAuthz{
		StatPrefix:            extAuthzTCPStatPrefix,
		FailureModeAllow:      c.GetFailOpen(),
		TransportApiVersion:   corev3.ApiVersion_V3,
		GrpcService:           grpcService(),
		FilterEnabledMetadata: extAuthzGate(wellknown.RoleBasedAccessControl),
	}
	return b.filters(kind, httpCfg, tcpCfg)
}

// filters packs the configs, validated: a provider whose values Envoy
// would reject (a header name it refuses) is reported rather than pushed
// for every listener of the gateway to be rejected.
func (b *extAuthzBuilder) filters(kind string, httpCfg *extauthzhttpv3.ExtAuthz, tcpCfg *extauthztcpv3.ExtAuthz) *extAuthz {
	out := &extAuthz{}
	a, err := protoconv.ValidatedAny(httpCfg)
	if err != nil {
		b.problem(kind, "Envoy would reject the ext_authz filter: %v", err)
		return nil
	}
	out.http = &hcmv3.HttpFilter{Name: wellknown.HTTPExternalAuthorization, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}
	if tcpCfg != nil {
		a, err := protoconv.ValidatedAny(tcpCfg)
		if err != nil {
			b.problem(kind, "Envoy would reject the network ext_authz filter: %v", err)
			return nil
		}
		out.tcp = &listenerv3.Filter{Name: wellknown.ExternalAuthorization, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
	}
	return out
}

// extAuthzGate is istiod's generateFilterMatcher: the ext_authz filter
// runs only when the RBAC filter named rbacFilter recorded that a CUSTOM
// shadow rule matched.
func extAuthzGate(rbacFilter string) *matcherv3.MetadataMatcher {
	return &matcherv3.MetadataMatcher{
		Filter: rbacFilter,
		Path: []*matcherv3.MetadataMatcher_PathSegment{
			{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: extAuthzMetadataKey}},
		},
		Value: &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{
			StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: extAuthzPolicyPrefix}},
		}},
	}
}

// headerMatchers is istiod's generateHeaders: "*abc" is a suffix match,
// "abc*" a prefix match, anything else exact, all ignoring case; nil for
// no headers.
func headerMatchers(headers []string) *matcherv3.ListStringMatcher {
	if len(headers) == 0 {
		return nil
	}
	out := &matcherv3.ListStringMatcher{}
	for _, h := range headers {
		m := &matcherv3.StringMatcher{IgnoreCase: true}
		if after, ok := strings.CutPrefix(h, "*"); ok {
			m.MatchPattern = &matcherv3.StringMatcher_Suffix{Suffix: after}
		} else if before, ok := strings.CutSuffix(h, "*"); ok {
			m.MatchPattern = &matcherv3.StringMatcher_Prefix{Prefix: before}
		} else {
			m.MatchPattern = &matcherv3.StringMatcher_Exact{Exact: h}
		}
		out.Patterns = append(out.Patterns, m)
	}
	return out
}

func timeoutOrDefault(d *durationpb.Duration) *durationpb.Duration {
	if d == nil {
		return &durationpb.Duration{Seconds: extAuthzDefaultTimeoutSeconds}
	}
	return &durationpb.Duration{Seconds: d.GetSeconds(), Nanos: d.GetNanos()}
}

// bufferSettings is istiod's withBodyRequest.
func bufferSettings(c *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationRequestBody) *extauthzhttpv3.BufferSettings {
	if c == nil {
		return nil
	}
	return &extauthzhttpv3.BufferSettings{
		MaxRequestBytes:     c.GetMaxRequestBytes(),
		AllowPartialMessage: c.GetAllowPartialMessage(),
		PackAsBytes:         c.GetPackAsBytes(),
	}
}

// providerKind is the YAML name of p's kind ("zipkin").
func providerKind(p *meshconfig.MeshConfig_ExtensionProvider) string {
	m := p.ProtoReflect()
	if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("provider")); fd != nil {
		return fd.JSONName()
	}
	return "of no kind"
}
