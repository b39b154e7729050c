// Package mesh reads istiod's mesh config (MeshConfig, istio.io/api
// mesh/v1alpha1): the YAML istiod takes from its --meshConfig file or from
// the mesh key of its istio ConfigMap, where istiod users keep their
// access log, tracing and extension provider defaults. Wayfinder reads the
// same YAML so that a user moving a gateway from istiod brings that config
// unchanged.
//
// It is a library without I/O: Parse applies a document onto istiod 1.29's
// defaults (DefaultMeshConfig) with istiod's merge rules (see Apply) and
// validates the result with istiod's rules; a Holder keeps the last good
// config of a source and tells a callback of each change. Watching the
// file or the ConfigMap, and pushing the change, is the caller's.
//
// Every error names its source (the file, or "ConfigMap ns/name key mesh")
// and its field ("extensionProviders[2].zipkin.port"). ReadFields lists
// the fields Wayfinder reads; Config.Ignored lists the fields a source
// sets that it does not, for the caller to log once by name
// (docs/mesh-config.md has the reference).
//
// Where it differs from istiod, on purpose:
//
//   - An extension provider with two kinds (zipkin and datadog) is
//     refused; istiod silently keeps the kind that comes later in the
//     proto.
//   - Names MeshConfig has no field for are dropped, as in istiod, but
//     listed (Config.Unknown) instead of logged at debug level.
//   - istiod's checks of fields Wayfinder neither reads nor can be misled
//     by (localityLbSetting, serviceSettings, meshMTLS, tlsDefaults, and
//     defaultConfig's statsd, metrics service, access log service and
//     private key provider) are not made.
//   - Some things istiod accepts quietly are accepted with a warning: a
//     provider name defined twice in one document, defaultConfig written
//     default_config (which istiod drops), a default provider that names
//     no provider, a JSON accessLogFormat that is not a JSON object, a
//     rootNamespace that is not a namespace name.
package mesh
