// Package conformance runs the official Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, at the gateway-api version in
// go.mod) against Wayfinder in Kubernetes mode, in process, on a real etcd
// and kube-apiserver on loopback (pkg/test/apiserver) with the suite's
// experimental-channel CRDs installed.
//
// There is no kubelet and no kube-controller-manager: the test program
// stands in for them (a "default" ServiceAccount per namespace, Ready Pods
// with loopback addresses for every Deployment, EndpointSlices for
// Services, loopback load-balancer addresses), so the suite's readiness
// checks pass. No proxy can run, so every test stops at its first request
// through a Gateway: the status checks before it run, the request is
// recorded and the test reported as skipped. Tests that send traffic in
// a way that cannot be stopped cleanly are skipped by name, each with its
// reason (skips_test.go). docs/conformance.md says what runs and how to
// reproduce the report (`make conformance`).
package conformance
