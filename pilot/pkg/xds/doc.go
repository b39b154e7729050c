// Package xds is Wayfinder's discovery server: it turns config changes into
// pushes and serves the result to Envoy over aggregated discovery (ADS,
// state of the world) using go-control-plane's snapshot cache.
//
// # Push
//
// Config handlers call ConfigUpdate; requests are merged by a debouncer and
// each merged request runs one push: the push context is built once, the
// services (clusters and endpoints) are translated once, and the gateway
// side (listeners and routes) is translated once per distinct gateway
// configuration among the connected proxies (model.GatewayGroupKey). Every
// proxy in a group is given the same *cache.Snapshot. A proxy that connects
// between pushes gets its group's snapshot from the current push, built on
// demand if no connected proxy had that group yet. Nothing is pushed before
// Synced: until the store has delivered its first full load, proxies wait
// rather than receive empty config.
//
// Versions are hashes of content, per type, so a push that changes only
// routes re-sends only RDS: the cache answers a watch only when the version
// of its type differs from what the proxy has. Every generated resource is
// checked with ValidateAll before it enters a snapshot; an invalid one is
// dropped and reported as a config error, and anything that then refers to
// a dropped resource is dropped too so the snapshot stays Consistent. A
// translator panic is contained and logged: a panic translating services
// abandons the push, one translating a gateway group keeps that group's
// proxies on their current config (and shows as a config error), rather
// than empty config reaching Envoy.
//
// Every push is a full recomputation, also for requests that are not Full;
// content versions make an endpoints-only change re-send only EDS.
//
// # NACKs
//
// go-control-plane's snapshot cache compares a request's version with the
// snapshot's. A NACK carries the last version the proxy accepted, so the
// cache would answer it with the rejected config again, at once, forever.
// The server therefore remembers, per stream and type, the nonce and
// version of the last response, and rewrites a NACK's version to the
// rejected version before the cache sees it: the proxy keeps its last good
// config and gets the next different version when config changes. NACKs are
// logged at warn, counted, and shown by /debug/syncz.
//
// # Metrics
//
// Istio's pilot_ name is used wherever Istio has a metric with the same
// meaning, so existing dashboards work; metrics Istio has no counterpart for
// are named wayfinder_. The xDS type label is cds, eds, lds or rds.
//
//	pilot_xds_pushes{type}              counter   responses sent to proxies
//	pilot_xds                           gauge     connected proxies (distinct node ids)
//	pilot_total_xds_rejects{type}       counter   NACKs received
//	pilot_debounce_time                 histogram seconds from the first merged change to the push
//	pilot_proxy_convergence_time        histogram seconds from a config change to the proxy's ACK, per changed type
//	pilot_xds_config_size_bytes{type}   histogram size of each response sent
//	pilot_push_triggers{type}           counter   push reasons (type is the reason, as in Istio)
//	wayfinder_push_duration_seconds     histogram time to compute one push and set every snapshot
//	wayfinder_translations_total{what}  counter   translator runs: what="services" or "gateway"
//	wayfinder_config_errors{kind,origin,severity} gauge  current config problems; origin is
//	                                    "source" (files, validation) or "translation"; kind is the
//	                                    Istio kind at fault or "none"; severity "error" or "warning"
//
// # Locking
//
// Two mutexes, always taken in this order: pushMu, then mu; the snapshot
// cache's own lock is taken last (SetSnapshot, ClearSnapshot) and the cache
// never calls back into this package, so there is no cycle.
//
//   - pushMu serialises pushes with proxy connects. A connect needs the
//     current push to pick its group's snapshot and may translate a new
//     group; holding pushMu means it either completes before a push reads the
//     set of proxies or runs after the push has published its result, so no
//     proxy is ever missed. Translation runs under pushMu only.
//   - mu guards the connected proxies, their streams and per-type status, and
//     the published push state. Critical sections are short (no translation)
//     so the go-control-plane callbacks, which run on stream goroutines,
//     never wait for a translation. Snapshots are set and cleared under mu so
//     a stream that closes during a push cannot leave a snapshot behind.
//
// SetSnapshot may write responses to a stream's channel while mu is held;
// it cannot block, because ordered ADS gives each stream a channel with room
// for one response per type and the cache holds at most one watch per type
// per stream.
package xds
