package model

import "github.com/wayfinder-dev/wayfinder/pkg/config"

// NamespaceOnlyAnnotation, set to "true" on a Gateway config, restricts the
// Gateway to proxies of its own namespace: its selector alone is not enough.
// Gateways converted from the Kubernetes Gateway API carry it, since their
// selector (gateway.networking.k8s.io/gateway-name: NAME) names the Gateway
// only within its namespace, and a Gateway of namespace A must never reach a
// proxy of namespace B (its certificates, its routes). It only narrows, so an
// Istio Gateway that sets it by hand gains nothing over others.
const NamespaceOnlyAnnotation = "internal.wayfinder.io/namespace-only"

// servesProxyNamespace reports whether gw may be served to p as far as
// namespaces go. The proxy's namespace is the one it connected as, which
// the secure port checks against its verified identity. A Gateway API
// proxy takes Gateways of its own namespace only (servesGatewayAPIProxy).
func servesProxyNamespace(gw config.Config, p *Proxy) bool {
	return (gw.Annotations[NamespaceOnlyAnnotation] != "true" || gw.Namespace == p.Namespace) && servesGatewayAPIProxy(gw, p)
}
