// Package adsc is an xDS client that behaves like Envoy on a state-of-the-world
// Aggregated Discovery Service stream. Tests use it to drive the control plane
// the way a real gateway would, and the load tool runs many of them at once.
//
// What it copies from Envoy, because a control plane is only tested honestly
// against a client that does the same things:
//
//   - Initialization order. Envoy's cluster manager initializes first: CDS is
//     requested (wildcard), and once its first response (or rejection) is in,
//     EDS is requested for every EDS cluster and awaited. Only then does LDS
//     start (wildcard), and every listener whose HTTP connection manager uses
//     RDS makes Envoy request those route configurations. Each wait is bounded
//     by an initial fetch timeout (15s by default, as in Envoy).
//   - ACK/NACK. Every response is decoded, validated with the resources'
//     protoc-gen-validate rules (Envoy rejects the same), and then offered to
//     Config.Reject. An accepted response is ACKed with its version and nonce;
//     a rejected one is NACKed with error_detail, the last accepted version and
//     the response's nonce, and the client keeps its previous state.
//   - Subscriptions follow the config: EDS names come from EDS clusters
//     (service_name, else the cluster name), RDS names from listeners' HTTP
//     connection managers. When a set changes the client sends a new request
//     with the names, the last accepted version and the last nonce of that type.
//   - The node is sent on the first request of the stream only.
//
// State is published as immutable snapshots so readers never lock; waiting is
// event driven (Client.WaitFor, Cursor.Next), never polling.
//
// The protocol bookkeeping (versions, subscriptions) lives apart from the gRPC
// stream it is sent on, so a reconnecting mode can replay it on a new stream
// the way Envoy does (last accepted versions, no nonces).
package adsc
