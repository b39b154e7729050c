// Package push translates a push: from the config a push request names
// to the push context, the translated groups and the immutable snapshot
// views every proxy of a group shares. The discovery server (package
// xds) decides when to push, which proxies there are and what each is
// sent; it drives a Translator for the rest.
//
// # Pushes
//
// Config handlers' push requests are merged by a Queue: Full requests by
// the config debouncer, endpoint-only requests (not Full) by a debouncer
// of their own with a short maximum, so that steady endpoint churn is
// pushed every 20 ms instead of waiting for a quiet period that never
// comes. Each merged request runs one push.
//
// A full push builds the push context once, translates the services
// (clusters and endpoints) once, and translates the gateway side
// (listeners, routes, SDS secrets) once per distinct gateway
// configuration among the connected proxies (model.GatewayGroupKey, with
// what a proxy's secrets and namespace view depend on). Proxyless gRPC
// clients (node type "proxyless" or GENERATOR=grpc metadata: IsProxyless)
// form one more group whose resources come from
// core.Generator.BuildProxyless, built once per push for all of them.
// Every proxy of a group shares one immutable view (one snapshot.TypeSet
// per type). A proxy that connects between pushes gets its group's view
// from the current push, built on demand (GroupFor) if no connected proxy
// had that group yet.
//
// A request that is not Full (only endpoints changed) rebuilds endpoints
// alone (core.Generator.BuildEndpoints, or only the named services'
// through core.PartialEndpointsGenerator): clusters and every group's
// listeners, routes and secrets are the last full push's, so only EDS
// changes. It falls back to a full push when a cluster would lose its
// assignment. A full request whose changed objects are all Gateways and
// VirtualServices (routingOnly) keeps the last push's clusters and
// endpoints, which do not depend on them, and translates the gateway side
// (and proxyless clients) again.
//
// Package snapshot turns what the generator returns into immutable
// snapshots, marshaled once per content: a push interns each
// translation's resources into sets (resources.go), one set per type in a
// View shared by every proxy of a group. What a push keeps for the next
// (the interner's and the route cache's previous generations) is let go
// once the push has been translated for every connected proxy (Release).
//
// A translator panic or an inconsistent view is logged and counted as a
// config error; the proxies concerned keep their current config. A panic
// of the service translation abandons the push (Next returns nil).
//
// # Locking
//
// The translator has no lock of its own. Its caller (the discovery
// server) holds its push lock (pushMu) around every call but Errors:
// pushes and proxy connects are serialised by it, and translation runs
// under it only. The server's other lock (mu, handed in as
// Options.Lock) guards what readers see without the push lock: the
// published State's Groups and an endpoint set's ancestors. The
// translator takes it, briefly and calling nothing, for its two writes
// those readers may race with: adding a group to a published State
// (GroupFor) and moving earlier endpoint sets to a new one
// (snapshot.TypeSet.TakeAncestors); and for Errors, which reads Groups.
// So the lock order stays the server's: push lock, then mu, then the
// interner's own lock (taken last, calling nothing). Never call a
// Translator method while holding mu.
package push
