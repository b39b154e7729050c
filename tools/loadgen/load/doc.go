// Package load simulates P Envoy gateways on ADS, one gRPC connection each,
// and measures how long a control plane takes to converge them: cold (from
// the start until each gateway has ACKed clusters, endpoints, listeners and
// routes) and after an update (from the trigger until each has ACKed a
// route configuration containing the new prefix).
//
// Each gateway behaves like Envoy where it matters to the server: Istio's
// node identity with labels istio=ingressgateway; CDS first, then EDS for
// the EDS clusters, then LDS, then RDS for the listeners' route names;
// every response ACKed (or NACKed if it does not decode or validate); a
// failed stream retried with Envoy's jittered exponential backoff,
// re-sending its subscriptions and last accepted versions. State of the
// world and delta xDS are both spoken.
//
// The tool must not be the bottleneck: on a 2-core machine it shares the
// CPU with the server it measures. So it never builds the response protos
// per gateway. A custom codec reads only a response's framing, hashes its
// resources' bytes, and looks the parse up by hash: the first gateway to
// see a given content decodes (and validates) it, every other gateway
// that receives the same bytes reuses the result. Only what the protocol
// needs is extracted: resource names, EDS and RDS references, and the
// route prefixes that tell when the update arrived, and the marker
// endpoints (Options.EndpointMarker) that tell a churn benchmark when each
// gateway ACKed the EDS carrying its change, and the marker route paths
// (Options.RouteMarker) that tell a route-propagation benchmark when each
// ACKed the route table carrying its change. Requests are written in wire
// form around a resource name list encoded once per distinct list: a
// state-of-the-world ACK repeats a gateway's EDS names (1,000 at 1,000
// services), and marshaling them for every ACK was a quarter of the tool's
// CPU under endpoint churn.
package load
