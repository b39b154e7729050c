package telemetry

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
	telemetryv1 "istio.io/api/telemetry/v1"
)

// configureCustomTags follows istiod's configureCustomTags for a gateway:
// the istio.* tags (unless Telemetry's enableIstioTags, or without
// Telemetry the proxy config's tracing.enableIstioTags, turns them off),
// then Telemetry's custom tags, or without any the proxy config's; sorted
// by tag.
func (b *builder) configureCustomTags(spec *tracingSpec, t *hcmv3.HttpConnectionManager_Tracing, pc *meshconfig.ProxyConfig) {
	istioTags := true
	if spec == nil {
		if e := pc.GetTracing().GetEnableIstioTags(); e != nil {
			istioTags = e.GetValue()
		}
	} else {
		istioTags = spec.enableIstioTags
	}
	var tags []*tracingv3.CustomTag
	if istioTags {
		tags = append(b.serviceTags(), policyTags()...)
	}
	if spec == nil || len(spec.customTags) == 0 {
		tags = append(tags, proxyConfigTags(pc.GetTracing().GetCustomTags())...)
	} else {
		tags = append(tags, b.telemetryTags(spec.customTags)...)
	}
	slices.SortStableFunc(tags, func(a, b *tracingv3.CustomTag) int { return strings.Compare(a.GetTag(), b.GetTag()) })
	t.CustomTags = tags
}

// serviceTags is istiod's buildServiceTags.
func (b *builder) serviceTags() []*tracingv3.CustomTag {
	p := b.in.Proxy
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return []*tracingv3.CustomTag{
		literalTag("istio.canonical_revision", or(p.Labels["service.istio.io/canonical-revision"], "latest")),
		literalTag("istio.canonical_service", or(p.Labels["service.istio.io/canonical-name"], "unknown")),
		literalTag("istio.mesh_id", or(p.MeshID, "unknown")),
		literalTag("istio.namespace", or(p.Namespace, "default")),
		literalTag("istio.cluster_id", or(p.ClusterID, "unknown")),
	}
}

func literalTag(tag, value string) *tracingv3.CustomTag {
	return &tracingv3.CustomTag{Tag: tag, Type: &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: value}}}
}

// policyTags are istiod's optionalPolicyTags: the dry-run authorization
// results the RBAC filter writes into request metadata (empty when no
// dry-run policy runs).
func policyTags() []*tracingv3.CustomTag {
	tag := func(name, key string) *tracingv3.CustomTag {
		return &tracingv3.CustomTag{Tag: name, Type: &tracingv3.CustomTag_Metadata_{Metadata: &tracingv3.CustomTag_Metadata{
			Kind: &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Request_{Request: &metadatav3.MetadataKind_Request{}}},
			MetadataKey: &metadatav3.MetadataKey{
				Key:  "envoy.filters.http.rbac",
				Path: []*metadatav3.MetadataKey_PathSegment{{Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: key}}},
			},
		}}}
	}
	return []*tracingv3.CustomTag{
		tag("istio.authorization.dry_run.allow_policy.name", "istio_dry_run_allow_shadow_effective_policy_id"),
		tag("istio.authorization.dry_run.allow_policy.result", "istio_dry_run_allow_shadow_engine_result"),
		tag("istio.authorization.dry_run.deny_policy.name", "istio_dry_run_deny_shadow_effective_policy_id"),
		tag("istio.authorization.dry_run.deny_policy.result", "istio_dry_run_deny_shadow_engine_result"),
	}
}

// telemetryTags is istiod's buildCustomTagsFromProvider: literal, header
// and environment tags; formatter tags only for proxies of Istio 1.29 or
// later.
func (b *builder) telemetryTags(custom map[string]*telemetryv1.Tracing_CustomTag) []*tracingv3.CustomTag {
	formatter := b.version().atLeast(1, 29)
	var out []*tracingv3.CustomTag
	for name, tag := range custom {
		if tag == nil {
			continue
		}
		t := &tracingv3.CustomTag{Tag: name}
		switch {
		case tag.GetEnvironment() != nil:
			e := tag.GetEnvironment()
			t.Type = &tracingv3.CustomTag_Environment_{Environment: &tracingv3.CustomTag_Environment{Name: e.GetName(), DefaultValue: e.GetDefaultValue()}}
		case tag.GetHeader() != nil:
			h := tag.GetHeader()
			t.Type = &tracingv3.CustomTag_RequestHeader{RequestHeader: &tracingv3.CustomTag_Header{Name: h.GetName(), DefaultValue: h.GetDefaultValue()}}
		case tag.GetLiteral() != nil:
			t.Type = &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: tag.GetLiteral().GetValue()}}
		case tag.GetFormatter() != nil:
			if !formatter {
				continue
			}
			t.Type = &tracingv3.CustomTag_Value{Value: tag.GetFormatter().GetValue()}
		default:
			// istiod emits the tag without a type, which Envoy rejects.
			b.meshProblem("defaultConfig.tracing.customTags["+strconv.Quote(name)+"]", "tag %q has no literal, header, environment or formatter", name)
			continue
		}
		out = append(out, t)
	}
	return out
}

// proxyConfigTags is istiod's buildCustomTagsFromProxyConfig.
func proxyConfigTags(custom map[string]*meshconfig.Tracing_CustomTag) []*tracingv3.CustomTag {
	var out []*tracingv3.CustomTag
	for name, tag := range custom {
		switch {
		case tag.GetEnvironment() != nil:
			e := tag.GetEnvironment()
			out = append(out, &tracingv3.CustomTag{Tag: name, Type: &tracingv3.CustomTag_Environment_{
				Environment: &tracingv3.CustomTag_Environment{Name: e.GetName(), DefaultValue: e.GetDefaultValue()}}})
		case tag.GetHeader() != nil:
			h := tag.GetHeader()
			out = append(out, &tracingv3.CustomTag{Tag: name, Type: &tracingv3.CustomTag_RequestHeader{
				RequestHeader: &tracingv3.CustomTag_Header{Name: h.GetName(), DefaultValue: h.GetDefaultValue()}}})
		case tag.GetLiteral() != nil:
			out = append(out, literalTag(name, tag.GetLiteral().GetValue()))
		}
	}
	return out
}

// istioVersion is istiod's IstioVersion, parsed as ParseIstioVersion.
type istioVersion struct{ major, minor, patch int }

var istioVersionRE = regexp.MustCompile(`^([1-9]+)\.([0-9]+)(\.([0-9]+))?`)

// version parses the proxy's ISTIO_VERSION; empty or unparsable means
// the newest, as in istiod.
func (b *builder) version() istioVersion {
	m := istioVersionRE.FindStringSubmatch(strings.TrimPrefix(b.in.Proxy.IstioVersion, "release-"))
	if m == nil {
		return istioVersion{65535, 65535, 65535}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch := 65535
	if m[4] != "" {
		patch, _ = strconv.Atoi(m[4])
	}
	return istioVersion{major, minor, patch}
}

func (v istioVersion) atLeast(major, minor int) bool {
	if v.major != major {
		return v.major > major
	}
	return v.minor >= minor
}
