// Package xds is Wayfinder's discovery server: it turns config changes into
// pushes and serves the result over aggregated discovery (ADS), state of
// the world (SotW) and delta. The stream loops (stream_sotw.go,
// stream_delta.go) and the answering of requests (cache.go) are this
// package's own; go-control-plane provides the protocol's types.
//
// # Push
//
// Config handlers call ConfigUpdate; a push.Queue merges the requests and
// each merged request runs one push, nothing before Synced. Package push
// translates it (push context, one translation per distinct gateway
// configuration, snapshot views); the server lists the connected proxies,
// gives each its group's view under mu and answers the watches that
// concern. A proxy that connects between pushes gets its group's view
// from the current push (push.Translator.GroupFor). A response the cache
// builds carries a snapshot.Body, which every stream sent the same
// response writes as a wire.Frame without marshaling it again.
//
// # Answering requests
//
// Each stream has a loop that reads requests (on a goroutine of its own)
// and sends responses in the order they were produced. A request of a type
// cancels that type's open watch, updates the stream's subscription and
// opens a new watch; a SotW request whose response_nonce is stale is
// ignored. The cache keeps per stream and type what was sent (the TypeSet
// it was cut from and, for a named request, the names answered) and
// answers a watch only when the proxy's view differs from that, by
// putting a response in the stream's outbox.
//
// Subscriptions (package subscription) share their maps: the name set of a
// request list the codec shares is built once for every stream naming
// that list, and a delta client holding exactly a view's set holds that
// set's own version map. A stream copies a shared map before changing it.
// go-control-plane's stream servers, used before, built a name map per
// stream for every request and ACK and copied a delta version map per
// stream and push: at 1,000 clusters and 500 gateways, 49 MB (SotW) and
// 103 MB (delta) of the live heap at cold start, and most of the cost of
// an endpoint push to 500 delta streams.
//
// SotW: a wildcard request (Envoy's CDS and LDS) gets every resource of
// the type; a named request (EDS, RDS, SDS, and every type for gRPC) gets
// the names it asks for that exist, so a missing listener or cluster is
// answered by its absence, which gRPC reads as does-not-exist. A request
// is answered when its stream has not been sent the type yet (even with
// nothing to send), when a named resource changed, appeared or went, when
// it names a resource not answered before, when a wildcard type's version
// changed, or when it names a version other than the one sent (unless it
// is answering a rejected response). Unlike go-control-plane's ADS
// snapshot cache, a named request never waits for a superset of names.
//
// Delta: the subscription's returned resources (what the stream was sent,
// or the initial_resource_versions of a reconnect) are compared with the
// view; only resources whose version differs are sent, and names the
// client holds that no longer exist are sent as removed. CDS and LDS are
// wildcard for Envoy; EDS, RDS and SDS are explicit subscriptions (legacy
// wildcard is off for them in both protocols). The first request of a type
// on a stream is answered even when nothing differs. When the client's
// version map is still the one the last response produced and the set it
// was cut from is unchanged (an ACK, or a push that left the type alone),
// nothing is compared name by name (deltaUnchanged).
//
// Requests: package wire decodes a long resource_names list once and gives
// the same immutable slice to every request with the same bytes (every
// gateway of a group names the same clusters with every EDS request and
// ACK).
//
// # NACKs
//
// A NACK names the rejected response by nonce and carries the version the
// proxy kept. The stream state records it (ts.nackedNonce): since the
// cache compares the view with what was sent, not with the request's
// version, the rejected content is not sent again, and the next change is.
// Requests are not rewritten. NACKs are logged at warn, counted in
// pilot_total_xds_rejects, and shown by /debug/syncz, for both protocols;
// a delta NACK keeps the proxy on its last good resources the same way.
//
// # Where memory goes
//
//   - The snapshots (package snapshot): one resource per distinct
//     content, one set per type and group, and per set the serialized
//     bodies of responses cut from it.
//   - Per stream and type: pointers to the TypeSet last sent and the name
//     set answered (shared between streams naming the same list); a delta
//     stream also holds the versions the client has: the shared version
//     map of the set it holds exactly, else a map of its own.
//   - Per send: a response envelope referencing shared Anys and a body,
//     and the few bytes of the nonce field, queued in gRPC until the
//     client reads it (one at a time per stream: see Hostile clients).
//   - Request name lists shared between streams (package wire): bounded in
//     bytes (limits.Options.SharedNamesBytes).
//
// # Hostile clients
//
// Package limits bounds what a client can cost; the server holds a
// limits.Limiter and asks it at each step of a stream (limits.go): at
// admission (streams per ServiceAccount and address, and a server-wide
// rate with a bounded queue), for every request (its rate, type URL and
// names, before anything else sees it), for a subscription once a
// request changed it, and for every write, which waits at most
// Options.Limits.SendTimeout on a goroutine of its own, so a stream that
// does not read never delays another. The limits on names grow with what the
// server serves: each push notes the sizes of the sets it publishes
// (servedStats). Client-supplied strings are clipped in logs, and lines
// about a client are rate-limited per client host (limits.Clip,
// Limiter.WarnPeer).
//
// # Metrics
//
// Istio's pilot_ name is used wherever Istio has a metric with the same
// meaning, so existing dashboards work; metrics Istio has no counterpart for
// are named wayfinder_. The xDS type label is cds, eds, lds, rds, sds, or
// other for any type URL a client made up (labels never take client values).
//
//	pilot_xds_pushes{type}              counter   responses sent to proxies (SotW and delta)
//	pilot_xds                           gauge     connected proxies (distinct node ids)
//	pilot_total_xds_rejects{type}       counter   NACKs received
//	pilot_debounce_time                 histogram seconds from the first merged change to the push
//	pilot_proxy_convergence_time        histogram seconds from a config change to the proxy's ACK, per changed type
//	pilot_xds_config_size_bytes{type}   histogram size of each response sent
//	pilot_push_triggers{type}           counter   push reasons (type is the reason, as in Istio)
//	wayfinder_push_duration_seconds     histogram time to compute one push and publish every view
//	wayfinder_translations_total{what}  counter   translator runs: services, endpoints, gateway, proxyless
//	wayfinder_xds_marshal_total{type}   counter   resources marshaled into a new shared Any
//	wayfinder_xds_response_encodings_total{type} counter responses serialized (once per distinct
//	                                    content, shared by every stream sent it)
//	pilot_xds_write_timeout             counter   streams closed: a response not read within the send timeout
//	wayfinder_xds_limit_exceeded_total{limit} counter streams closed or refused for a limit: request_rate,
//	                                    request_names, subscribed_names, types_per_stream, type_url_length,
//	                                    name_length, request_bytes, subscribed_bytes, node_size,
//	                                    streams_per_identity, streams_per_peer, admission_queue
//	wayfinder_xds_stream_admission_wait_seconds histogram how long new streams queued for admission
//	wayfinder_log_lines_suppressed_total counter  repeated log lines about a client left out
//	wayfinder_config_errors{kind,origin,severity} gauge  current config problems; origin is
//	                                    "source" (files, validation) or "translation"; kind is the
//	                                    Istio kind at fault or "none"; severity "error" or "warning"
//
// The metrics are registered on Options.Registry, which the assembly owns
// and serves at /metrics.
//
// # Debug
//
// The debug endpoints (package debug) show the server's state through
// debug.State, which the server implements in debugstate*.go: each method
// copies what it shows under mu, briefly, so a handler never holds the
// server's locks while it renders. The assembly mounts them, with /metrics
// and pprof.
//
// # Locking
//
// Two mutexes, always taken in this order: pushMu, then mu (the interner's
// own lock is taken last and calls nothing). The translator (package push)
// is called under pushMu only and takes mu itself for its writes to what
// readers see; its package comment states the contract.
//
//   - pushMu serialises pushes with proxy connects. A connect needs the
//     current push to pick its group's view and may translate a new group;
//     holding pushMu means it either completes before a push reads the set
//     of proxies or runs after the push has published its result, so no
//     proxy is ever missed. Translation runs under pushMu only.
//   - mu guards the connected proxies, their streams, watches and per-type
//     state, and the published push state. Critical sections are short (no
//     translation) so the stream loops, which take it to open watches and
//     record requests and responses, never wait for a translation.
//
// Responses are put in a stream's outbox while mu is held; this never
// blocks (the outbox is a list, holding at most one response per type: a
// stream has at most one watch per type, answered at most once).
package xds
