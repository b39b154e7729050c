// Package gatewayapi is the file-mode source of the Gateway API: its
// StaticSource runs the pure conversion of package
// pilot/pkg/config/gatewayapi on objects its caller reads (the config
// folder's, parsed and checked against the CRD schemas by
// pkg/config/manifest), on the shared queue like every other source, and
// serves the generated Istio Gateways and VirtualServices as a
// model.ConfigStoreController. Problems name the file and document an
// object came from (StaticOptions.Locate).
//
// There is no Kubernetes in file mode: ServicesFromEntries answers which
// Services exist from the folder's ServiceEntries, and there are no
// Namespace objects. It writes no status anywhere; Status is what the
// last conversion computed, for /debug/configz.
package gatewayapi
