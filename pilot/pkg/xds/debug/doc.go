// Package debug is the debug HTTP endpoints of the discovery server:
// /debug/configz, /debug/config_dump, /debug/syncz, /debug/adsz,
// /debug/list, /debug/version and /healthz/ready, the access guard in
// front of them, and the one registry that mounts them and lists them in
// /debug/list.
//
// Handlers are thin. Each asks State, which the discovery server
// implements, for a snapshot of what it shows (taken under the server's
// lock, briefly, and owned by the caller) and renders it as JSON with
// every list sorted, so equal state gives equal bytes; ConfigDump renders
// a proxy's snapshot view as Envoy's admin ConfigDump, private keys
// redacted as Envoy's admin shows them. The JSON shapes are
// package debugapi's, which the CLI reads. This package does not import
// the server: the server hands it state through State, and the assembly
// (pilot/pkg/bootstrap) adds what belongs to neither through Options: the
// sections of /debug/configz a config source keeps (the Gateway API
// status), and endpoints it owns itself (/metrics and /debug/pprof/),
// which are listed and guarded like the rest.
//
// # Access
//
// In Kubernetes mode debug requests carry a ServiceAccount token
// (Options.Auth). Each endpoint has an Access: AccessAdmin endpoints
// (everything in configz, pprof, the list, and any unknown path) are for
// the debug admin namespaces and ServiceAccounts only; AccessScoped ones
// (config_dump, syncz, adsz) answer any authenticated caller, showing only
// the proxies of its own namespace; AccessOpen ones (version, readiness,
// metrics) need no token. In file mode there is no Auth: the debug port
// binds to loopback and every request sees everything. Every endpoint
// answers GET and HEAD only (ReadOnly).
package debug
