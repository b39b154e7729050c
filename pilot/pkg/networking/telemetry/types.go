package telemetry

import (
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
	telemetryv1 "istio.io/api/telemetry/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// Telemetry is one telemetry.istio.io Telemetry object as the translator
// reads it.
type Telemetry struct {
	Name      string
	Namespace string
	// CreationTime orders Telemetries as istiod does: the oldest first,
	// then by name, then by namespace.
	CreationTime time.Time
	Spec         *telemetryv1.Telemetry
}

// Proxy is what the translator needs to know of one gateway proxy.
type Proxy struct {
	// Namespace is the proxy's config namespace (istiod's
	// Proxy.ConfigNamespace), whose Telemetries apply to it.
	Namespace string
	// Labels are the proxy's workload labels, matched against selectors.
	Labels map[string]string
	// GatewayName is the Gateway API Gateway this proxy is deployed for,
	// which targetRefs name. Empty: istiod's rule, the value of the
	// gateway.networking.k8s.io/gateway-name label when the proxy has it;
	// a proxy with neither is not a Gateway API gateway.
	GatewayName string
	// ServiceCluster is the Envoy node's cluster (--service-cluster), the
	// service name datadog and opentelemetry tracers report.
	ServiceCluster string
	// MeshID and ClusterID are the MESH_ID and CLUSTER_ID node metadata,
	// written into the istio.* span tags ("unknown" when empty).
	MeshID    string
	ClusterID string
	// IstioVersion is the ISTIO_VERSION node metadata. Empty means the
	// newest, as in istiod; it gates zipkin's collector_service and
	// trace_context_option and formatter custom tags.
	IstioVersion string
	// ProxyConfig is the proxy's effective ProxyConfig (the PROXY_CONFIG
	// node metadata istio-agent sends); nil means the mesh config's
	// defaultConfig. Its tracing field holds the fallback sampling,
	// custom tags and max path tag length.
	ProxyConfig *meshconfig.ProxyConfig
}

// ServiceNamespaces answers which namespaces have a service with exactly
// this hostname, as istiod's service index (HostnameAndNamespace) does;
// provider services ("ns/host" or "host") are resolved through it.
type ServiceNamespaces func(hostname string) []string

// Input is everything one proxy's telemetry depends on.
type Input struct {
	// Mesh is the mesh config; nil means istiod's defaults.
	Mesh *mesh.Config
	// Telemetries are all Telemetry objects, in any order.
	Telemetries []Telemetry
	// RootNamespace overrides the mesh config's rootNamespace when set.
	RootNamespace string
	Proxy         Proxy
	// Services resolves provider services. Nil assumes every provider
	// service exists (the caller checks Result.Clusters instead).
	Services ServiceNamespaces
	// HasPort reports whether a provider service that resolved has the
	// provider's port; nil assumes it does. Without it there is no
	// cluster, and Envoy rejects a logger or tracer naming one.
	HasPort func(host string, port uint32) bool
	// Getenv resolves zipkin and opentelemetry headers given by envName
	// (istiod reads its own environment). Nil resolves them to "".
	Getenv func(string) string
}

// Result is the telemetry of one gateway proxy, as istiod 1.29 configures
// it on a gateway's listeners. Its protos share sub-messages (one logger's
// config in all three lists): read only.
type Result struct {
	// Decision is the merged Telemetry API view that produced the rest.
	Decision Decision
	// HTTPAccessLogs go on every HTTP connection manager's access_log.
	HTTPAccessLogs []*accesslogv3.AccessLog
	// TCPAccessLogs go on every tcp_proxy's access_log (TCP, TLS
	// passthrough and AUTO_PASSTHROUGH chains).
	TCPAccessLogs []*accesslogv3.AccessLog
	// ListenerAccessLogs go on every listener's access_log; each carries
	// istiod's response flag filter NR (no filter chain matched).
	ListenerAccessLogs []*accesslogv3.AccessLog
	// Tracing is the HTTP connection manager's tracing; nil: none.
	Tracing *hcmv3.HttpConnectionManager_Tracing
	// RequestIDExtension is the HTTP connection manager's
	// request_id_extension, which istiod always sets.
	RequestIDExtension *hcmv3.RequestIDExtension
	// Clusters are the clusters the loggers and tracer send to, sorted by
	// name, for the cluster translator to check (they are not built here).
	Clusters []ProviderCluster
	// Problems say what was left out and why: a provider the mesh config
	// does not have, a provider service that does not resolve, a provider
	// of the wrong kind, each against the Telemetry field that names the
	// provider (or the mesh config). Sorted.
	Problems []*config.Error
}

// ProviderCluster is a cluster a provider's logger or tracer sends to.
type ProviderCluster struct {
	// Name is the cluster's name, outbound|PORT||HOST as istiod names it.
	Name string `json:"name"`
	// Host and Port are the provider's service hostname and port.
	Host string `json:"host,omitempty"`
	Port uint32 `json:"port,omitempty"`
	// Bootstrap marks the envoy_accesslog_service cluster of
	// enableEnvoyAccessLogService, which istiod expects in the proxy's
	// bootstrap, not in CDS.
	Bootstrap bool `json:"bootstrap,omitempty"`
	// Providers names the providers that use it.
	Providers []string `json:"providers"`
}

// Decision, AccessLogDecision and TracingDecision are the model's: the
// server carries the decision to the debug endpoints and the CLI.
type (
	Decision          = model.TelemetryDecision
	AccessLogDecision = model.TelemetryAccessLog
	TracingDecision   = model.TelemetryTracing
)

// CreationKey orders Telemetries (policyattach.SortByCreation).
func (t Telemetry) CreationKey() (time.Time, string, string) {
	return t.CreationTime, t.Name, t.Namespace
}
