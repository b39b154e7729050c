// Package gatewaydeploy deploys the proxies of Gateway API Gateways, as
// istiod and Envoy Gateway do: for each Gateway of a class handled by
// Wayfinder (gatewayapi.ControllerName) it server-side applies, with field
// manager FieldManager and force, a ServiceAccount, a Role and
// RoleBinding letting it read the Secrets of its namespace, a ConfigMap,
// a Deployment and a Service, all named GATEWAY-CLASS
// (gatewayapi.DeploymentName) in the Gateway's namespace, labelled
// ManagedLabel and controlled by the Gateway through an ownerReference,
// so deleting the Gateway deletes them (the garbage collector).
//
// # What it does not own
//
// It writes and deletes only what it made: labelled ManagedLabel and
// controlled by the Gateway (ownership.go). Before writing an object it
// reads what exists under its name, from its informer caches (which see
// only labelled objects) or else live from the API server; an object
// that exists and is not the Gateway's (the user's Service of that name,
// or the objects of another Gateway whose GATEWAY-CLASS is the same)
// holds the whole Gateway back: nothing of it is written, and its
// Programmed condition says which object is in the way (Held, read by
// the Gateway API status writer). istiod refuses such objects too
// (canManage in its deployment controller) but says so only in its
// debug log. A write to an existing object carries the resourceVersion
// read, so an object whose label or owner was removed since is not
// written; an object in the way is read again every Recheck, as no
// informer sees it go.
//
//   - The Deployment runs Envoy (Options.Image, DefaultImage) with the
//     ConfigMap's bootstrap (rendered here, validated as a v3 Bootstrap):
//     ADS over TLS to Wayfinder's secure port with a projected token of
//     the ServiceAccount, as manifests/envoy/bootstrap-tls.yaml, Istio's
//     node ID router~IP~POD.NAMESPACE~NAMESPACE.svc.SUFFIX from the
//     downward API, and metadata NAMESPACE, CLUSTER_ID and LABELS, and
//     PROXY_CONFIG when the Gateway has a proxy.istio.io/config
//     annotation (merged over the mesh defaultConfig, as istio-agent
//     does; ProxyConfigAnnotation). The
//     pods are labelled gateway.networking.k8s.io/gateway-name: GATEWAY,
//     which the converted Istio Gateways select. A new bootstrap changes
//     a pod-template annotation, so the pods roll.
//   - The Service (LoadBalancer unless Options.ServiceType or the
//     Gateway's networking.istio.io/service-type say otherwise) has one
//     port per distinct listener port; its address is the Gateway's
//     (package gatewayapi computes Programmed and status.addresses from it).
//
// A Gateway opts out with gatewayapi.ManagedAnnotation: "false", or with a
// spec.addresses entry of type Hostname naming a Service (istiod's
// manual deployment); its deployed objects are then removed.
//
// # Who applies, and when
//
// The Deployer is a status.Syncer, run by the Istio status writer on each
// of its passes (every second and on config changes) while that replica
// holds the Lease wayfinder-istio-status, and limited by the writer's
// token bucket: one leader applies, the others only watch. Each pass
// compares the rendered objects with the deployed ones in label-filtered
// informer caches and applies only what is missing or drifted (a field
// the deployer sets that differs or is gone; what the API server or
// others add is ignored), so a steady state costs no write.
package gatewaydeploy
