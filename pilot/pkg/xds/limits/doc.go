// Package limits bounds what one ADS client can cost the discovery
// server, so that a hostile or broken client cannot take it down, starve
// other clients or pin memory. The server (package xds) owns a Limiter
// and asks it at each step of a stream's life: admission, every request,
// every subscription change and every write.
//
// gRPC-Go's SendMsg queues a message while the stream has write quota and
// blocks once the client stops taking bytes (flow control): each write
// runs on its own goroutine and waits at most Options.SendTimeout, after
// which the stream is closed (pilot_xds_write_timeout); returning from
// the handler makes gRPC cancel the stream, which ends the blocked write.
// No lock or shared slot is held while a write waits, so a stream that
// does not read never delays another (Limiter.SendWithin).
//
// Each request is checked against the stream's token bucket, the names it
// carries (how many, how long, how many bytes) and the types the stream
// asks for before anything else sees it (Limiter.CheckRequest), and a
// subscription's size once the request changed it
// (Limiter.CheckSubscription). The limits on names grow with what the
// server serves (served.go): the server notes the sets it sends in a
// Served, and Limiter.Names gives the bounds as they stand. New streams
// count against their ServiceAccount and address (streams.go) and wait
// for a server-wide token, refused once too many are waiting
// (Limiter.Admit).
//
// Client-supplied strings are clipped in logs (Clip), and lines about a
// client are rate-limited per client host (Limiter.WarnPeer, logsafe.go).
//
// Every refusal is counted in wayfinder_xds_limit_exceeded_total under a
// label from a fixed set (Labels), so clients cannot make up label values.
package limits
