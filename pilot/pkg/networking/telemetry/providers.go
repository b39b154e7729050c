package telemetry

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	grpcalsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	otelalsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/open_telemetry/v3"
	reqwithoutqueryv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	otlpcommon "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/protoconv"
)

// clusterName is istiod's BuildSubsetKey(outbound, "", host, port).
func clusterName(host string, port uint32) string {
	return "outbound|" + strconv.FormatUint(uint64(port), 10) + "||" + host
}

// lookupCluster follows istiod's LookupCluster
// (pilot/pkg/model/telemetry_logging.go): a provider's service is
// "namespace/hostname", which must exist in that namespace, or
// "hostname", which must exist in exactly one namespace. It returns the
// hostname (the gRPC authority) and the cluster, and records the cluster
// as used by provider; ok is false, with a problem, when the service does
// not resolve.
func (b *builder) lookupCluster(provider, service string, port uint32) (host, cluster string, ok bool) {
	if service == "" {
		b.providerProblem(provider, "provider %q: service must not be empty", provider)
		return "", "", false
	}
	if ns, name, found := strings.Cut(service, "/"); found && !strings.Contains(name, "/") {
		if b.services != nil && !slices.Contains(b.services(name), ns) {
			b.providerProblem(provider, "provider %q: could not find service %s in the service registry", provider, service)
			return "", "", false
		}
		host = name
	} else {
		if b.services != nil {
			namespaces := b.services(service)
			switch {
			case len(namespaces) > 1:
				namespaces = slices.Sorted(slices.Values(namespaces))
				b.providerProblem(provider, "provider %q: found %s in multiple namespaces %v, specify the namespace explicitly in the format of <Namespace>/<Hostname>",
					provider, service, namespaces)
				return "", "", false
			case len(namespaces) == 0:
				b.providerProblem(provider, "provider %q: could not find service %s in the service registry", provider, service)
				return "", "", false
			}
		}
		host = service
	}
	cluster = clusterName(host, port)
	if b.in.HasPort != nil && !b.in.HasPort(host, port) {
		b.providerProblem(provider, "provider %q: service %s has no port %d (no cluster %s); not used", provider, host, port, cluster)
		return "", "", false
	}
	b.useCluster(ProviderCluster{Name: cluster, Host: host, Port: port}, provider)
	return host, cluster, true
}

func (b *builder) useCluster(c ProviderCluster, provider string) {
	if have, ok := b.clusters[c.Name]; ok {
		c = have
	}
	if !slices.Contains(c.Providers, provider) {
		c.Providers = append(c.Providers, provider)
		slices.Sort(c.Providers)
	}
	b.clusters[c.Name] = c
}

// reqWithoutQueryFormatter is istiod's formatter for %REQ_WITHOUT_QUERY%.
func reqWithoutQueryFormatter() *corev3.TypedExtensionConfig {
	a, err := protoconv.ValidatedAny(&reqwithoutqueryv3.ReqWithoutQuery{})
	if err != nil {
		panic("telemetry: req_without_query: " + err.Error())
	}
	return &corev3.TypedExtensionConfig{Name: reqWithoutQueryName, TypedConfig: a}
}

// otelAccessLog follows istiod's openTelemetryLog and
// buildOpenTelemetryAccessLogConfig: the body is the text format
// (istiod's default text format when none is given, without the newline
// file formats get), the labels become attributes sorted by name, and
// istiod's wasm filter state objects are sent.
func (b *builder) otelAccessLog(provider string, p *meshconfig.MeshConfig_ExtensionProvider_EnvoyOpenTelemetryLogProvider) protoconv.Validatable {
	host, cluster, ok := b.lookupCluster(provider, p.GetService(), p.GetPort())
	if !ok {
		return nil
	}
	logName := p.GetLogName()
	if logName == "" {
		logName = otelALSLogName
	}
	format := EnvoyTextLogFormat
	if t := p.GetLogFormat().GetText(); t != "" {
		format = t
	}
	labels := p.GetLogFormat().GetLabels()
	cfg := &otelalsv3.OpenTelemetryAccessLogConfig{
		CommonConfig: &grpcalsv3.CommonGrpcAccessLogConfig{
			LogName:                 logName,
			GrpcService:             envoyGRPC(cluster, host),
			TransportApiVersion:     corev3.ApiVersion_V3,
			FilterStateObjectsToLog: slices.Clone(envoyWasmStateToLog),
		},
		DisableBuiltinLabels: true,
		Body:                 &otlpcommon.AnyValue{Value: &otlpcommon.AnyValue_StringValue{StringValue: format}},
	}
	if len(labels.GetFields()) != 0 {
		cfg.Attributes = &otlpcommon.KeyValueList{Values: attributes(labels)}
	}
	cfg.Formatters = otelFormatters(format, labels)
	return cfg
}

// attributes is istiod's ConvertStructToAttributeKeyValues: each label as
// a string attribute, sorted by name.
func attributes(s *structpb.Struct) []*otlpcommon.KeyValue {
	out := make([]*otlpcommon.KeyValue, 0, len(s.GetFields()))
	for _, k := range slices.Sorted(maps.Keys(s.GetFields())) {
		out = append(out, &otlpcommon.KeyValue{
			Key:   k,
			Value: &otlpcommon.AnyValue{Value: &otlpcommon.AnyValue_StringValue{StringValue: s.GetFields()[k].GetStringValue()}},
		})
	}
	return out
}

// otelFormatters is istiod's accessLogFormatters: the formatters the text
// and the labels need, once each, sorted by name.
func otelFormatters(text string, labels *structpb.Struct) []*corev3.TypedExtensionConfig {
	out := textFormatters(text)
	for _, f := range jsonFormatters(labels) {
		if !slices.ContainsFunc(out, func(have *corev3.TypedExtensionConfig) bool { return have.GetName() == f.GetName() }) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *corev3.TypedExtensionConfig) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}
