// Package tools holds developer tooling kept apart from the control plane.
// The performance tooling of issue 6 is:
//
//   - workload and workloadgen: the benchmark scenario as Istio YAML
//     (N ServiceEntries, N VirtualServices on one ingress Gateway) and the
//     one-VirtualService update;
//   - loadgen: P simulated Envoy gateways over ADS (state of the world or
//     delta) that report convergence as JSON;
//   - floor: a server that does no translation and writes the same
//     pre-serialized responses (a dump of pilot-discovery's own output) to
//     every stream, so every run shows what ADS alone costs;
//   - bench: the matrix of services x gateways against a fresh
//     pilot-discovery and the floor, with peak RSS and CPU seconds, written
//     as a Markdown table and a PNG chart (`make bench`; the chart is drawn
//     by benchchart, a module of its own so that the plotting library
//     stays out of the main go.mod); with --kube
//     (`make bench-kube`), the same workload written into a real
//     kube-apiserver (pkg/test/apiserver) for pilot-discovery in Kubernetes
//     mode, and an endpoint-churn case timed from the API write to every
//     gateway's ACK.
package tools
