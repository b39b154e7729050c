// Package gatewayapi is the Kubernetes source of the Gateway API: its
// Controller watches GatewayClasses, Gateways, ListenerSets
// (listenerset.go), HTTPRoutes, GRPCRoutes, TLSRoutes, TCPRoutes,
// ReferenceGrants and BackendTLSPolicies (backendtls.go), the Services their backends and addresses name and the
// Namespaces allowedRoutes selectors read, runs the pure conversion of
// package pilot/pkg/config/gatewayapi on every change (through the shared
// queue, like every other source), and serves the generated Istio
// Gateways, VirtualServices and DestinationRules as a
// model.ConfigStoreController.
//
// Which kinds are served is asked of discovery at start and again whenever
// a Gateway API CustomResourceDefinition appears or changes (crds.go), so
// a CRD installed after start is watched without a restart; readiness
// never waits for a kind that is not installed.
//
// The Controller keeps what the last conversion decided: the status
// (status_source.go), which the status writer of
// pilot/pkg/config/kube/status writes under its Lease and /debug/configz
// shows, and the SecretGrants the xDS server asks which generated Gateway
// may have which Secret. Update events that keep an object's
// metadata.generation (a status write, ours included) convert nothing
// again.
//
// Conversion also reads Secrets (certificateRefs, resolved against the
// Secret) through the SDS store's informer, handed in as
// ControllerOptions.Secrets, and ConfigMaps (parametersRef, CA bundles)
// from an informer of its own; only a change of one the last conversion
// looked up converts again (refs.go).
package gatewayapi
