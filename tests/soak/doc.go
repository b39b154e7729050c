// Package soak runs pilot-discovery (the real binary, Kubernetes mode,
// against the real API server of pkg/test/apiserver) under mixed churn for
// a while: EndpointSlices, VirtualServices and a TLS Secret change and
// gateways on the secure port disconnect and reconnect, round after round.
// At the end every gateway must hold the final config, no response may
// have been NACKed, the binary must have logged no error, and its
// goroutines, open file descriptors and memory must be back near their
// values after warm-up: what grows with time, not with load, is a leak.
//
// `make test` runs the short form (-soak.duration, default 30s); `make
// soak` runs it for 30 minutes.
package soak
