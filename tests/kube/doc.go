// Package kube holds the Kubernetes-mode tests of pilot-discovery against
// a real API server (pkg/test/apiserver: etcd and kube-apiserver on
// loopback): config, Services and EndpointSlices written through the API
// reach an Envoy-like ADS client (pkg/adsc); endpoint churn pushes EDS
// only; watches survive an API server restart; a namespace the RBAC
// forbids is reported, not fatal; faults lose nothing (faults*_test.go: an
// API server outage, a watch expired by etcd compaction, a Secret deleted
// and recreated, the control plane restarting under many gateways,
// gateways that stop reading). Each test works in its own namespace of
// one shared cluster.
package kube
