// Package telemetry translates the Telemetry API (telemetry.istio.io
// Telemetry) and the mesh config's telemetry settings into the access
// loggers and tracer of one gateway proxy, as istiod 1.29 configures them.
//
// It is a pure translator: Build takes the mesh config (pkg/config/mesh),
// every Telemetry object, the root namespace, the proxy, and a way to ask
// which namespaces have a service hostname, and returns Envoy protos for
// the places istiod puts them on a gateway: the HTTP connection manager's
// access_log, tracing and request_id_extension, the tcp_proxy's
// access_log, and the listener's access_log. It also returns the merged
// decision (for debug output) and the provider clusters the loggers and
// tracer send to (outbound|PORT||HOST, for the cluster translator to
// check; it builds no clusters).
//
// ForProxy (gateway.go) is how the server calls it: the push's mesh
// config, Telemetry objects and root namespace and a model.Proxy, with
// provider services resolved against the services the proxy's view sees,
// so a provider whose cluster would not exist gets no logger or tracer.
// Result.Gateway is what the listener translator places, and Key names it
// for the gateway group key.
//
// It follows these istiod functions, read from the 1.29 release:
//
//   - which Telemetries apply: Telemetries.applicableTelemetries and
//     WorkloadPolicyMatcher.ShouldAttachPolicy (pilot/pkg/model): the
//     oldest namespace-wide Telemetry of the root namespace, the oldest of
//     the proxy's namespace, then every one in the proxy's namespace whose
//     selector matches the proxy's labels or (for a Gateway API gateway)
//     whose targetRefs name its Gateway;
//   - the merge: mergeLogs, matchWorkloadMode and Telemetries.Tracing
//     (pilot/pkg/model/telemetry.go) in workload mode CLIENT, istiod's mode
//     for the gateway listener class;
//   - access loggers: telemetryAccessLog, FileAccessLogFromMeshConfig,
//     fileAccessLogFromTelemetry, the HTTP and TCP gRPC and OpenTelemetry
//     loggers, LookupCluster (pilot/pkg/model/telemetry_logging.go), and
//     buildAccessLogFromTelemetry, the CEL filter and the mesh config
//     fallback of pilot/pkg/networking/core/accesslog.go;
//   - tracing: configureTracingFromTelemetry, configureFromProviderConfig,
//     the zipkin, datadog, skywalking and opentelemetry configs,
//     configureSampling, configureCustomTags
//     (pilot/pkg/networking/core/tracing.go) and
//     BuildUUIDRequestIDExtension.
//
// istiod's environment switches are taken at their defaults:
// PILOT_TRACE_SAMPLING 1.0, PILOT_SPAWN_UPSTREAM_SPAN_FOR_GATEWAY true,
// ENABLE_SELECTOR_BASED_K8S_GATEWAY_POLICY true.
//
// Where it differs from istiod, on purpose (docs/config.md lists these):
// an extension provider the mesh config reports invalid is not used; a
// logger, tracer or custom tag whose Envoy config would not validate is
// left out (istiod sends it and Envoy rejects the listener); a lightstep
// provider, deprecated in istiod (whose 1.29 code cannot build it), does
// not trace. Each is named in Result.Problems.
package telemetry
