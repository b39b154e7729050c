// Package snapshot turns the resources the translators generate into the
// immutable snapshots the discovery server (package xds) serves, each
// resource marshaled once and each response serialized once, shared by
// every proxy and every stream that carries them:
//
//   - Resource: one generated resource, validated and marshaled once per
//     content by an Interner (Prepare, and ServiceSets, EndpointSet and
//     GatewaySets for a translation's results, which also prune what
//     refers to something missing or is referred to by nothing).
//   - TypeSet: one type's resources of a view, sorted by name and
//     versioned by content; a partial set (PartialTypeSet) is an earlier
//     one with a few resources replaced, and says which (ChangedSince).
//   - View: one set per served type, everything one group of proxies is
//     served (a gateway configuration, or the proxyless gRPC clients).
//   - Body: the serialized bytes of a response cut from a set, written by
//     every stream sent the same response (SotwBody, DeltaBody, and
//     SotwFrame and DeltaFrame to write one).
//
// # Marshal once
//
// Every generated resource is validated (ValidateAll) and marshaled
// (deterministically) into an *anypb.Any once per content: the Interner
// keys resources by scope, name and content hash and hands out the same
// immutable *Resource, whose Any is referenced by every view containing
// it and every response carrying it (SotW responses share a wildcard
// type's Any slice; delta responses share a prebuilt discovery.Resource).
// Each send gets only a fresh response envelope, and is not marshaled
// either: see Serialize once. A resource unchanged since the last push is
// encoded into a scratch buffer to find its hash (a route configuration
// is hashed from its virtual hosts' kept encodings, see routeenc.go) and
// then reuses its earlier *Resource: no validation, no new Any
// (wayfinder_xds_marshal_total counts new Anys). Comparing with
// proto.Equal instead was measured at 2.7 times the cost of that
// encoding. A type's version hashes its (name, content hash) pairs; a
// resource's version (delta) is its content hash.
//
// # Serialize once
//
// Marshaling each response per stream cost a copy of the whole config per
// gateway (gRPC's buffer, megabytes, until the peer read it) and most of
// the server's CPU. Instead, a response the server's cache builds goes to
// the stream's outbox with a Body: the response's bytes without its
// nonce, kept by the TypeSet it was cut from and shared by every response
// of that set with the same resources (and, for delta, the same
// removals). All wildcard SotW responses of a view share one body; named
// and delta responses share one when their selections are equal, as they
// are for every gateway of a group. The first stream to send a body
// serializes it (wayfinder_xds_response_encodings_total); every stream
// then writes it as a wire.Frame: the body's bytes, without copying, and
// the nonce field (5 in both messages), which package wire's "proto"
// codec (it replaces gRPC's, in every server of the process) emits
// between the fields before and after it, so the bytes are exactly those
// of a marshaled response (bodyenc.go writes them by hand, in the
// marshaler's field order; a test holds them to it). A response changed
// after the cache built it, or not built by it, is marshaled as before.
//
// # Where memory goes
//
//   - One *Resource per distinct resource content: its encoding (the
//     Any), a delta wrapper pointing at it, and the names it refers to.
//     The Interner holds the current and the previous generation per
//     type, so a resource replaced by a push is freed one push later
//     (sooner: the server calls Release once a push has reached every
//     proxy, see retention.go).
//   - One TypeSet per type and group (sorted pointers, a name index, the
//     shared Any slice), shared by all proxies of the group.
//   - Per TypeSet: the serialized bodies of responses cut from it (at
//     most eight per protocol), shared by every stream sent them, and the
//     last cut of named resources (namedlists.go).
package snapshot
