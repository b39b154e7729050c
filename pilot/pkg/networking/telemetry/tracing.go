package telemetry

import (
	"fmt"
	"net/url"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	resourcedetectorsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// Tracer names istiod gives the HTTP tracers (pilot/pkg/networking/core/tracing.go).
const (
	datadogTracer       = "envoy.tracers.datadog"
	openTelemetryTracer = "envoy.tracers.opentelemetry"
	skywalkingTracer    = "envoy.tracers.skywalking"
	zipkinTracer        = "envoy.tracers.zipkin"
)

// DefaultTraceSampling is istiod's PILOT_TRACE_SAMPLING default: the
// percentage of requests traced when neither Telemetry nor the proxy's
// tracing config sets one. Wayfinder has no such variable.
const DefaultTraceSampling = 1.0

// spawnUpstreamSpan is istiod's PILOT_SPAWN_UPSTREAM_SPAN_FOR_GATEWAY
// default: a gateway's tracer starts a span of its own for each upstream
// request.
const spawnUpstreamSpan = true

// configureTracing follows istiod's configureTracingFromTelemetry for a
// gateway's connection manager: the tracing (nil for none) and the
// request ID extension istiod always sets.
func (b *builder) configureTracing(spec *tracingSpec) (*hcmv3.HttpConnectionManager_Tracing, *hcmv3.RequestIDExtension) {
	pc := b.proxyConfig()
	if spec == nil {
		// No Telemetry: the mesh config's enableTracing, with the proxy
		// config's sampling and tags, and no tracer.
		if !b.mesh.GetEnableTracing() {
			return nil, b.requestIDExtension(true)
		}
		t := &hcmv3.HttpConnectionManager_Tracing{}
		configureSampling(t, proxyConfigSampling(pc))
		b.configureCustomTags(nil, t, pc)
		if n := pc.GetTracing().GetMaxPathTagLength(); n != 0 {
			t.MaxPathTagLength = wrapperspb.UInt32(n)
		}
		return t, b.requestIDExtension(true)
	}
	if spec.disabled {
		return nil, b.requestIDExtension(true)
	}
	t, customSampler, err := b.tracerFor(spec.provider)
	if err != nil {
		b.providerProblem(spec.provider.GetName(), "tracing provider %q: %v", spec.provider.GetName(), err)
		return nil, b.requestIDExtension(true)
	}
	// Sampling: the provider's own sampler, else Telemetry's
	// randomSamplingPercentage, else the proxy config's.
	sampling := proxyConfigSampling(pc)
	switch {
	case customSampler:
		sampling = 100
	case spec.randomSamplingPercentage != nil:
		sampling = *spec.randomSamplingPercentage
	}
	configureSampling(t, sampling)
	b.configureCustomTags(spec, t, pc)
	if t.GetMaxPathTagLength() == nil && pc.GetTracing().GetMaxPathTagLength() != 0 {
		t.MaxPathTagLength = wrapperspb.UInt32(pc.GetTracing().GetMaxPathTagLength())
	}
	return t, b.requestIDExtension(spec.useRequestIDForTraceSampling)
}

// requestIDExtension is istiod's BuildUUIDRequestIDExtension.
func (b *builder) requestIDExtension(useForSampling bool) *hcmv3.RequestIDExtension {
	a, err := protoconv.ValidatedAny(&uuidv3.UuidRequestIdConfig{UseRequestIdForTraceSampling: wrapperspb.Bool(useForSampling)})
	if err != nil {
		panic("telemetry: request ID extension: " + err.Error())
	}
	return &hcmv3.RequestIDExtension{TypedConfig: a}
}

// tracerFor follows istiod's configureFromProviderConfig and
// buildHCMTracing for a gateway: the tracer of one provider, and whether
// the provider samples on its own.
func (b *builder) tracerFor(p *meshconfig.MeshConfig_ExtensionProvider) (*hcmv3.HttpConnectionManager_Tracing, bool, error) {
	startChildSpan := spawnUpstreamSpan
	var (
		name         string
		maxTagLength uint32
		cfg          protoconv.Validatable
		custom       bool
		err          error
	)
	switch prov := p.GetProvider().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_Zipkin:
		name, maxTagLength = zipkinTracer, prov.Zipkin.GetMaxTagLength()
		cfg, err = b.zipkinConfig(p.GetName(), prov.Zipkin)
	case *meshconfig.MeshConfig_ExtensionProvider_Datadog:
		name, maxTagLength = datadogTracer, prov.Datadog.GetMaxTagLength()
		host, cluster, ok := b.lookupCluster(p.GetName(), prov.Datadog.GetService(), prov.Datadog.GetPort())
		if !ok {
			return nil, false, fmt.Errorf("could not find cluster for the tracing provider")
		}
		cfg = &tracev3.DatadogConfig{CollectorCluster: cluster, ServiceName: b.in.Proxy.ServiceCluster, CollectorHostname: host}
	case *meshconfig.MeshConfig_ExtensionProvider_Skywalking:
		name = skywalkingTracer
		startChildSpan = true
		host, cluster, ok := b.lookupCluster(p.GetName(), prov.Skywalking.GetService(), prov.Skywalking.GetPort())
		if !ok {
			return nil, false, fmt.Errorf("could not find cluster for the tracing provider")
		}
		cfg = &tracev3.SkyWalkingConfig{GrpcService: envoyGRPC(cluster, host)}
	case *meshconfig.MeshConfig_ExtensionProvider_Opentelemetry:
		name, maxTagLength = openTelemetryTracer, prov.Opentelemetry.GetMaxTagLength()
		cfg, custom, err = b.otelConfig(p.GetName(), prov.Opentelemetry)
	default:
		return nil, false, fmt.Errorf("a %s provider does not trace", kindOf(p))
	}
	if err != nil {
		return nil, false, err
	}
	a, err := protoconv.ValidatedAny(cfg)
	if err != nil {
		return nil, false, err
	}
	t := &hcmv3.HttpConnectionManager_Tracing{
		Provider: &tracev3.Tracing_Http{Name: name, ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: a}},
	}
	if startChildSpan {
		t.SpawnUpstreamSpan = wrapperspb.Bool(true)
	}
	if maxTagLength != 0 {
		t.MaxPathTagLength = wrapperspb.UInt32(maxTagLength)
	}
	return t, custom, nil
}

// zipkinConfig follows istiod's zipkinConfig: a proxy of Istio 1.29 or
// later (and one that does not say its version) gets the collector as an
// HTTP service with a timeout (5s by default) and headers; older ones the
// legacy collector fields.
func (b *builder) zipkinConfig(provider string, z *meshconfig.MeshConfig_ExtensionProvider_ZipkinTracingProvider) (protoconv.Validatable, error) {
	host, cluster, ok := b.lookupCluster(provider, z.GetService(), z.GetPort())
	if !ok {
		return nil, fmt.Errorf("could not find cluster for the tracing provider")
	}
	path := z.GetPath()
	if path == "" {
		path = "/api/v2/spans"
	}
	zc := &tracev3.ZipkinConfig{
		CollectorEndpointVersion: tracev3.ZipkinConfig_HTTP_JSON,
		TraceId_128Bit:           !z.GetEnable_64BitTraceId(),
		SharedSpanContext:        wrapperspb.Bool(false),
	}
	v := b.version()
	if v.atLeast(1, 29) {
		timeout := z.GetTimeout()
		if timeout == nil {
			timeout = durationpb.New(5 * time.Second)
		}
		svc := &corev3.HttpService{HttpUri: &corev3.HttpUri{
			Uri:              "http://" + host + path,
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster},
			Timeout:          timeout,
		}}
		if len(z.GetHeaders()) > 0 {
			svc.RequestHeadersToAdd = b.httpHeaders(z.GetHeaders())
		}
		zc.CollectorService = svc
	} else {
		zc.CollectorCluster = cluster
		zc.CollectorEndpoint = path
		zc.CollectorHostname = host
	}
	if v.atLeast(1, 28) {
		zc.TraceContextOption = tracev3.ZipkinConfig_USE_B3
		if z.GetTraceContextOption() == meshconfig.MeshConfig_ExtensionProvider_ZipkinTracingProvider_USE_B3_WITH_W3C_PROPAGATION {
			zc.TraceContextOption = tracev3.ZipkinConfig_USE_B3_WITH_W3C_PROPAGATION
		}
	}
	return zc, nil
}

// otelConfig follows istiod's otelConfig: export over HTTP when http is
// set (the URI is the hostname joined with the path, without a scheme, as
// istiod writes it), else over gRPC; resource detectors; and the
// Dynatrace sampler, whose presence makes the provider sample on its own.
func (b *builder) otelConfig(provider string, o *meshconfig.MeshConfig_ExtensionProvider_OpenTelemetryTracingProvider) (protoconv.Validatable, bool, error) {
	host, cluster, ok := b.lookupCluster(provider, o.GetService(), o.GetPort())
	if !ok {
		return nil, false, fmt.Errorf("could not find cluster for the tracing provider")
	}
	oc := &tracev3.OpenTelemetryConfig{ServiceName: b.in.Proxy.ServiceCluster}
	if h := o.GetHttp(); h != nil {
		uri, err := url.JoinPath(host, h.GetPath())
		if err != nil {
			return nil, false, fmt.Errorf("could not parse otlp/http traces endpoint: %v", err)
		}
		oc.HttpService = &corev3.HttpService{
			HttpUri: &corev3.HttpUri{
				Uri:              uri,
				HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster},
				Timeout:          h.GetTimeout(),
			},
			RequestHeadersToAdd: b.httpHeaders(h.GetHeaders()),
		}
	} else {
		g := envoyGRPC(cluster, host)
		g.Timeout = o.GetGrpc().GetTimeout()
		if md := o.GetGrpc().GetInitialMetadata(); md != nil {
			g.InitialMetadata = make([]*corev3.HeaderValue, 0, len(md))
			for _, h := range md {
				g.InitialMetadata = append(g.InitialMetadata, &corev3.HeaderValue{Key: h.GetName(), Value: b.headerValue(h)})
			}
		}
		oc.GrpcService = g
	}
	if rd := o.GetResourceDetectors(); rd != nil {
		oc.ResourceDetectors = []*corev3.TypedExtensionConfig{}
		if rd.GetEnvironment() != nil {
			oc.ResourceDetectors = append(oc.ResourceDetectors, extension("envoy.tracers.opentelemetry.resource_detectors.environment",
				&resourcedetectorsv3.EnvironmentResourceDetectorConfig{}))
		}
		if rd.GetDynatrace() != nil {
			oc.ResourceDetectors = append(oc.ResourceDetectors, extension("envoy.tracers.opentelemetry.resource_detectors.dynatrace",
				&resourcedetectorsv3.DynatraceResourceDetectorConfig{}))
		}
	}
	if o.GetSampling() == nil {
		return oc, false, nil
	}
	if s := o.GetDynatraceSampler(); s != nil {
		sampler, err := b.dynatraceSampler(provider, host, cluster, o, s)
		if err != nil {
			return nil, false, err
		}
		oc.Sampler = sampler
	}
	return oc, true, nil
}

// dynatraceSampler follows istiod's configureDynatraceSampler.
func (b *builder) dynatraceSampler(provider, host, cluster string, o *meshconfig.MeshConfig_ExtensionProvider_OpenTelemetryTracingProvider,
	s *meshconfig.MeshConfig_ExtensionProvider_OpenTelemetryTracingProvider_DynatraceSampler,
) (*corev3.TypedExtensionConfig, error) {
	dsc := &samplersv3.DynatraceSamplerConfig{
		Tenant:             s.GetTenant(),
		ClusterId:          s.GetClusterId(),
		RootSpansPerMinute: s.GetRootSpansPerMinute(),
	}
	if api := s.GetHttpService(); api == nil {
		// The sampler reuses the OTLP HTTP exporter's service and headers.
		h := o.GetHttp()
		if h == nil {
			return nil, fmt.Errorf("dynatrace sampler could not get http settings. considering setting the http_service field on the dynatrace sampler")
		}
		uri, err := url.JoinPath(host, "api/v2/samplingConfiguration")
		if err != nil {
			return nil, fmt.Errorf("could not parse dynatrace adaptative sampling endpoint %v", err)
		}
		dsc.HttpService = &corev3.HttpService{
			HttpUri:             &corev3.HttpUri{Uri: uri, HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster}, Timeout: h.GetTimeout()},
			RequestHeadersToAdd: b.httpHeaders(h.GetHeaders()),
		}
	} else {
		dtHost, dtCluster, ok := b.lookupCluster(provider, api.GetService(), api.GetPort())
		if !ok {
			return nil, fmt.Errorf("could not find cluster for dynatrace sampler")
		}
		uri, err := url.JoinPath(dtHost, api.GetHttp().GetPath())
		if err != nil {
			return nil, fmt.Errorf("could not parse dynatrace adaptative sampling endpoint %v", err)
		}
		dsc.HttpService = &corev3.HttpService{
			HttpUri:             &corev3.HttpUri{Uri: uri, HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: dtCluster}, Timeout: api.GetHttp().GetTimeout()},
			RequestHeadersToAdd: b.httpHeaders(api.GetHttp().GetHeaders()),
		}
	}
	return extension("envoy.tracers.opentelemetry.samplers.dynatrace", dsc), nil
}

func extension(name string, m protoconv.Validatable) *corev3.TypedExtensionConfig {
	a, err := protoconv.ValidatedAny(m)
	if err != nil {
		panic("telemetry: " + name + ": " + err.Error())
	}
	return &corev3.TypedExtensionConfig{Name: name, TypedConfig: a}
}

// httpHeaders is istiod's buildHTTPHeaders.
func (b *builder) httpHeaders(headers []*meshconfig.MeshConfig_ExtensionProvider_HttpHeader) []*corev3.HeaderValueOption {
	out := make([]*corev3.HeaderValueOption, 0, len(headers))
	for _, h := range headers {
		out = append(out, &corev3.HeaderValueOption{
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			Header:       &corev3.HeaderValue{Key: h.GetName(), Value: b.headerValue(h)},
		})
	}
	return out
}

// headerValue is istiod's getHeaderValue: a literal value, or an
// environment variable of the control plane.
func (b *builder) headerValue(h *meshconfig.MeshConfig_ExtensionProvider_HttpHeader) string {
	if name := h.GetEnvName(); name != "" {
		if b.in.Getenv == nil {
			return ""
		}
		return b.in.Getenv(name)
	}
	return h.GetValue()
}

// configureSampling is istiod's: client and overall sampling 100%, random
// sampling the percentage.
func configureSampling(t *hcmv3.HttpConnectionManager_Tracing, pct float64) {
	t.ClientSampling = &typev3.Percent{Value: 100}
	t.OverallSampling = &typev3.Percent{Value: 100}
	t.RandomSampling = &typev3.Percent{Value: pct}
}

// proxyConfigSampling is istiod's proxyConfigSamplingValue: the proxy
// config's tracing.sampling when set (1% when above 100), else
// DefaultTraceSampling.
func proxyConfigSampling(pc *meshconfig.ProxyConfig) float64 {
	s := pc.GetTracing().GetSampling()
	if s == 0 {
		return DefaultTraceSampling
	}
	if s > 100 {
		return 1
	}
	return s
}
