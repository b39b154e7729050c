package telemetry

import (
	"slices"
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	grpcalsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// Names istiod gives the access loggers and their pieces
// (pilot/pkg/model/telemetry_logging.go, pilot/pkg/networking/core/accesslog.go).
const (
	fileAccessLogName    = "envoy.access_loggers.file"
	httpGRPCALSName      = "envoy.access_loggers.http_grpc"
	tcpGRPCALSName       = "envoy.tcp_grpc_access_log"
	otelALSName          = "envoy.access_loggers.open_telemetry"
	celFilterName        = "envoy.access_loggers.extension_filters.cel"
	reqWithoutQueryName  = "envoy.formatter.req_without_query"
	reqWithoutQueryToken = "%REQ_WITHOUT_QUERY"

	httpALSLogName     = "http_envoy_accesslog"
	tcpALSLogName      = "tcp_envoy_accesslog"
	otelALSLogName     = "otel_envoy_accesslog"
	listenerALSLogName = "listener_envoy_accesslog"

	// envoyALSCluster is the bootstrap cluster of the mesh config's
	// enableEnvoyAccessLogService (istiod's EnvoyAccessLogCluster).
	envoyALSCluster = "envoy_accesslog_service"
	devStdout       = "/dev/stdout"
	// builtinAccessLogProvider is the provider that falls back to the mesh
	// config's accessLogFormat and accessLogEncoding.
	builtinAccessLogProvider = "envoy"
)

var (
	// envoyStateToLog are the filter state objects istiod's HTTP and TCP
	// gRPC access log providers send by default.
	envoyStateToLog = []string{"upstream_peer", "downstream_peer"}
	// envoyWasmStateToLog are those of the OpenTelemetry provider and of
	// enableEnvoyAccessLogService.
	envoyWasmStateToLog = []string{
		"upstream_peer", "downstream_peer",
		"wasm.upstream_peer", "wasm.upstream_peer_id", "wasm.downstream_peer", "wasm.downstream_peer_id",
	}
)

// loggingConfig is istiod's LoggingConfig: one provider's access logger
// and its merged filter.
type loggingConfig struct {
	provider string
	disabled bool
	filter   *string // the CEL expression, when the provider has a filter
	log      *accesslogv3.AccessLog
}

// accessLogFor follows istiod's telemetryAccessLog: the access logger of
// one extension provider, nil for a provider that does not log or whose
// service does not resolve (a problem says which).
func (b *builder) accessLogFor(p *meshconfig.MeshConfig_ExtensionProvider) *accesslogv3.AccessLog {
	var (
		name string
		cfg  protoconv.Validatable
		err  error
	)
	switch prov := p.GetProvider().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog:
		f := prov.EnvoyFileAccessLog
		name = fileAccessLogName
		if p.GetName() == builtinAccessLogProvider && f.GetLogFormat() == nil && !f.GetOmitEmptyValues() {
			cfg = b.fileAccessLogFromMesh(f.GetPath())
		} else {
			cfg = fileAccessLogFromProvider(f)
		}
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyHttpAls:
		h := prov.EnvoyHttpAls
		common := b.grpcCommon(p.GetName(), h.GetService(), h.GetPort(), h.GetLogName(), httpALSLogName, h.GetFilterStateObjectsToLog())
		if common == nil {
			return nil
		}
		name = httpGRPCALSName
		cfg = &grpcalsv3.HttpGrpcAccessLogConfig{
			CommonConfig:                    common,
			AdditionalRequestHeadersToLog:   h.GetAdditionalRequestHeadersToLog(),
			AdditionalResponseHeadersToLog:  h.GetAdditionalResponseHeadersToLog(),
			AdditionalResponseTrailersToLog: h.GetAdditionalResponseTrailersToLog(),
		}
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyTcpAls:
		t := prov.EnvoyTcpAls
		common := b.grpcCommon(p.GetName(), t.GetService(), t.GetPort(), t.GetLogName(), tcpALSLogName, t.GetFilterStateObjectsToLog())
		if common == nil {
			return nil
		}
		name = tcpGRPCALSName
		cfg = &grpcalsv3.TcpGrpcAccessLogConfig{CommonConfig: common}
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyOtelAls:
		name = otelALSName
		if cfg = b.otelAccessLog(p.GetName(), prov.EnvoyOtelAls); cfg == nil {
			return nil
		}
	default:
		// Tracing, metrics and ext_authz providers log nothing (istiod
		// handles stackdriver's logging in its stats filter).
		b.providerProblem(p.GetName(), "access log provider %q is a %s provider, which does not log", p.GetName(), kindOf(p))
		return nil
	}
	a, err := protoconv.ValidatedAny(cfg)
	if err != nil {
		b.providerProblem(p.GetName(), "access log provider %q: %v", p.GetName(), err)
		return nil
	}
	return &accesslogv3.AccessLog{Name: name, ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: a}}
}

// grpcCommon is the common part of istiod's HTTP and TCP gRPC access log
// configs; nil when the service does not resolve.
func (b *builder) grpcCommon(provider, service string, port uint32, logName, defaultLogName string, state []string) *grpcalsv3.CommonGrpcAccessLogConfig {
	host, cluster, ok := b.lookupCluster(provider, service, port)
	if !ok {
		return nil
	}
	if logName == "" {
		logName = defaultLogName
	}
	if len(state) == 0 {
		state = envoyStateToLog
	}
	return &grpcalsv3.CommonGrpcAccessLogConfig{
		LogName:                 logName,
		GrpcService:             envoyGRPC(cluster, host),
		TransportApiVersion:     corev3.ApiVersion_V3,
		FilterStateObjectsToLog: slices.Clone(state),
	}
}

func envoyGRPC(cluster, authority string) *corev3.GrpcService {
	return &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
		EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: cluster, Authority: authority},
	}}
}

// fileAccessLogFromMesh follows istiod's FileAccessLogFromMeshConfig: a
// file access log to path, formatted by the mesh config's accessLogFormat
// and accessLogEncoding (istiod's default text or JSON format when the
// format is empty; a JSON format that does not parse falls back to the
// default, as istiod does).
func (b *builder) fileAccessLogFromMesh(path string) protoconv.Validatable {
	m := b.mesh
	fl := &filev3.FileAccessLog{Path: path}
	var formatters []*corev3.TypedExtensionConfig
	switch m.GetAccessLogEncoding() {
	case meshconfig.MeshConfig_TEXT:
		format := textFormat(m.GetAccessLogFormat())
		formatters = textFormatters(format)
		fl.AccessLogFormat = &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: textSource(format),
		}}
	case meshconfig.MeshConfig_JSON:
		labels := EnvoyJSONLogFormat()
		if f := m.GetAccessLogFormat(); f != "" {
			parsed := &structpb.Struct{}
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(f), parsed); err != nil {
				b.meshProblem("accessLogFormat", "not a JSON object, istiod's default JSON format is used: %v", err)
			} else {
				labels = parsed
			}
		}
		formatters = jsonFormatters(labels)
		fl.AccessLogFormat = &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format:            &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: labels},
			JsonFormatOptions: &corev3.JsonFormatOptions{SortProperties: false},
		}}
	}
	if len(formatters) > 0 {
		fl.GetLogFormat().Formatters = formatters
	}
	return fl
}

// fileAccessLogFromProvider follows istiod's fileAccessLogFromTelemetry.
func fileAccessLogFromProvider(p *meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider) protoconv.Validatable {
	path := p.GetPath()
	if path == "" {
		path = devStdout
	}
	fl := &filev3.FileAccessLog{Path: path}
	var formatters []*corev3.TypedExtensionConfig
	omit := p.GetOmitEmptyValues()
	labels, isJSON := p.GetLogFormat().GetLogFormat().(*meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider_LogFormat_Labels)
	switch {
	case isJSON:
		s := labels.Labels
		if len(s.GetFields()) == 0 {
			s = EnvoyJSONLogFormat()
		}
		formatters = jsonFormatters(s)
		fl.AccessLogFormat = &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format:            &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: s},
			JsonFormatOptions: &corev3.JsonFormatOptions{SortProperties: false},
			OmitEmptyValues:   omit,
		}}
	case p.GetLogFormat() != nil && p.GetLogFormat().GetLogFormat() == nil:
		// A logFormat with neither text nor labels: istiod sets no format,
		// so Envoy's own default applies.
	default:
		// Text, or no logFormat at all: istiod's default text format.
		format := textFormat(p.GetLogFormat().GetText())
		formatters = textFormatters(format)
		fl.AccessLogFormat = &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format:          textSource(format),
			OmitEmptyValues: omit,
		}}
	}
	if len(formatters) > 0 {
		fl.GetLogFormat().Formatters = formatters
	}
	return fl
}

// textFormat is istiod's fileAccessLogFormat: the default format for "",
// else the format with a trailing newline added when missing.
func textFormat(f string) string {
	if f == "" {
		return EnvoyTextLogFormat
	}
	if !strings.HasSuffix(f, "\n") {
		f += "\n"
	}
	return f
}

func textSource(f string) *corev3.SubstitutionFormatString_TextFormatSource {
	return &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
		Specifier: &corev3.DataSource_InlineString{InlineString: f},
	}}
}

// textFormatters and jsonFormatters are istiod's accessLogTextFormatters
// and accessLogJSONFormatters: the req_without_query formatter when the
// format uses %REQ_WITHOUT_QUERY.
func textFormatters(f string) []*corev3.TypedExtensionConfig {
	if strings.Contains(f, reqWithoutQueryToken) {
		return []*corev3.TypedExtensionConfig{reqWithoutQueryFormatter()}
	}
	return nil
}

func jsonFormatters(s *structpb.Struct) []*corev3.TypedExtensionConfig {
	for _, v := range s.GetFields() {
		if strings.Contains(v.GetStringValue(), reqWithoutQueryToken) {
			return []*corev3.TypedExtensionConfig{reqWithoutQueryFormatter()}
		}
	}
	return nil
}

// meshAccessLogs follows istiod's fallback when no Telemetry or default
// provider configures logging (setHTTPAccessLog, setTCPAccessLog and
// setListenerAccessLog in pilot/pkg/networking/core/accesslog.go): the
// mesh config's accessLogFile, and the gRPC access log service of
// enableEnvoyAccessLogService.
func (b *builder) meshAccessLogs(r *Result) {
	m := b.mesh
	if m.GetAccessLogFile() != "" {
		if a, err := protoconv.ValidatedAny(b.fileAccessLogFromMesh(m.GetAccessLogFile())); err != nil {
			b.meshProblem("accessLogFile", "%v", err)
		} else {
			fl := func(f *accesslogv3.AccessLogFilter) *accesslogv3.AccessLog {
				return &accesslogv3.AccessLog{Name: fileAccessLogName, ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: a}, Filter: f}
			}
			r.HTTPAccessLogs = append(r.HTTPAccessLogs, fl(nil))
			r.TCPAccessLogs = append(r.TCPAccessLogs, fl(nil))
			if !m.GetDisableEnvoyListenerLog() {
				r.ListenerAccessLogs = append(r.ListenerAccessLogs, fl(listenerFilter()))
			}
		}
	}
	if !m.GetEnableEnvoyAccessLogService() {
		return
	}
	b.useCluster(ProviderCluster{Name: envoyALSCluster, Bootstrap: true}, "enableEnvoyAccessLogService")
	common := func(logName string) *grpcalsv3.CommonGrpcAccessLogConfig {
		return &grpcalsv3.CommonGrpcAccessLogConfig{
			LogName:                 logName,
			GrpcService:             envoyGRPC(envoyALSCluster, ""),
			TransportApiVersion:     corev3.ApiVersion_V3,
			FilterStateObjectsToLog: slices.Clone(envoyWasmStateToLog),
		}
	}
	add := func(to *[]*accesslogv3.AccessLog, name string, cfg protoconv.Validatable, f *accesslogv3.AccessLogFilter) {
		a, err := protoconv.ValidatedAny(cfg)
		if err != nil {
			b.meshProblem("enableEnvoyAccessLogService", "%v", err)
			return
		}
		*to = append(*to, &accesslogv3.AccessLog{Name: name, ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: a}, Filter: f})
	}
	add(&r.HTTPAccessLogs, httpGRPCALSName, &grpcalsv3.HttpGrpcAccessLogConfig{CommonConfig: common(httpALSLogName)}, nil)
	add(&r.TCPAccessLogs, tcpGRPCALSName, &grpcalsv3.TcpGrpcAccessLogConfig{CommonConfig: common(tcpALSLogName)}, nil)
	if !m.GetDisableEnvoyListenerLog() {
		add(&r.ListenerAccessLogs, tcpGRPCALSName, &grpcalsv3.TcpGrpcAccessLogConfig{CommonConfig: common(listenerALSLogName)}, listenerFilter())
	}
}

// telemetryAccessLogs follows istiod's buildAccessLogFromTelemetry: every
// provider that is not disabled, its Telemetry filter (a CEL expression)
// anded after the filter of the place it goes.
func (b *builder) telemetryAccessLogs(cfgs []loggingConfig, place *accesslogv3.AccessLogFilter) []*accesslogv3.AccessLog {
	var out []*accesslogv3.AccessLog
	for _, c := range cfgs {
		if c.disabled {
			continue
		}
		var filters []*accesslogv3.AccessLogFilter
		if place != nil {
			filters = append(filters, place)
		}
		if c.filter != nil {
			f, err := celFilter(*c.filter)
			if err != nil {
				b.providerProblem(c.provider, "access log provider %q: filter: %v", c.provider, err)
				continue
			}
			filters = append(filters, f)
		}
		out = append(out, &accesslogv3.AccessLog{Name: c.log.GetName(), ConfigType: c.log.GetConfigType(), Filter: andFilter(filters)})
	}
	return out
}

// celFilter is istiod's buildAccessLogFilterFromTelemetry: the Telemetry
// filter's expression as Envoy's CEL access log filter.
func celFilter(expr string) (*accesslogv3.AccessLogFilter, error) {
	a, err := protoconv.ValidatedAny(&celv3.ExpressionFilter{Expression: expr})
	if err != nil {
		return nil, err
	}
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ExtensionFilter{
		ExtensionFilter: &accesslogv3.ExtensionFilter{Name: celFilterName, ConfigType: &accesslogv3.ExtensionFilter_TypedConfig{TypedConfig: a}},
	}}, nil
}

// andFilter is istiod's buildAccessLogFilter.
func andFilter(f []*accesslogv3.AccessLogFilter) *accesslogv3.AccessLogFilter {
	switch len(f) {
	case 0:
		return nil
	case 1:
		return f[0]
	}
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_AndFilter{
		AndFilter: &accesslogv3.AndFilter{Filters: f},
	}}
}

// listenerFilter is istiod's listenerAccessLogFilter: a listener logs only
// connections no filter chain took (response flag NR), which no
// connection manager or tcp_proxy sees.
func listenerFilter() *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
		ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{"NR"}},
	}}
}

// kindOf names a provider's kind as the mesh config spells it.
func kindOf(p *meshconfig.MeshConfig_ExtensionProvider) string {
	if p.GetProvider() == nil {
		return "kindless"
	}
	fs := p.ProtoReflect().WhichOneof(p.ProtoReflect().Descriptor().Oneofs().ByName("provider"))
	if fs == nil {
		return "kindless"
	}
	return fs.JSONName()
}
