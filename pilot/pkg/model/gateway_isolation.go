package model

import (
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// GatewayAPIProxyLabel is the label by which a Gateway API Gateway selects
// its deployed proxies (Istio's convention): its value is the Gateway's
// name. A proxy carrying it is a Gateway API proxy (see
// servesGatewayAPIProxy).
const GatewayAPIProxyLabel = "gateway.networking.k8s.io/gateway-name"

// GatewayAPIListenerAnnotation marks a Gateway generated for one listener
// of a Kubernetes Gateway API Gateway; its value is the listener's name.
// Such a Gateway's server hosts are written "NAMESPACE/host" for each
// namespace the listener's allowedRoutes admit, and a VirtualService of
// any other namespace that names it is refused and reported
// (refusedBindings). Like NamespaceOnlyAnnotation it only narrows: an
// Istio Gateway that sets it by hand gains nothing, it only has its own
// hosts' namespaces enforced and reported.
const GatewayAPIListenerAnnotation = "internal.wayfinder.io/gateway-api-listener"

// vsBinding is one VirtualService's reference to one Gateway
// ("namespace/name").
type vsBinding struct {
	vs      config.Key
	gateway string
}

// admission is which namespaces' VirtualServices a generated Gateway
// admits: those its server hosts name.
type admission struct {
	all        bool
	namespaces []string
	listener   string
	// gatewayAPI is the Gateway API Gateway's name (its proxies' label).
	gatewayAPI string
}

func (a *admission) admits(ns string) bool { return a.all || slices.Contains(a.namespaces, ns) }

// add takes in one server host: "ns/host", "./host", "*/host" or a bare
// host (any namespace, as the route translator reads it).
func (a *admission) add(h, gatewayNamespace string) {
	ns, _, scoped := strings.Cut(h, "/")
	switch {
	case !scoped || ns == "*":
		a.all = true
	case ns == ".":
		a.namespaces = append(a.namespaces, gatewayNamespace)
	default:
		a.namespaces = append(a.namespaces, ns)
	}
}

// refusedBindings decides, and reports in ps.Errors, which bindings of
// VirtualServices to Gateways generated for Gateway API listeners are
// refused: those of a VirtualService whose namespace none of the
// Gateway's server hosts admits. The route translator would already bind
// no route of it there (it reads the same hosts); refusing it here keeps
// it out of the Gateway's VirtualServices altogether and says why on the
// VirtualService's status, instead of leaving it silently unserved. It
// also reports Istio Gateways that select the proxies of a Gateway API
// Gateway of another namespace, which servesGatewayAPIProxy refuses.
//
// The rule is on the VirtualService's namespace only: the routes the
// conversion generates live in the Gateway's namespace, which their
// Gateway's hosts always admit.
func (ps *PushContext) refusedBindings() map[vsBinding]bool {
	adm := map[string]*admission{}
	gatewayAPI := map[string][]string{} // Gateway API Gateway name -> its namespaces
	for _, gw := range ps.gateways {
		listener, ok := gw.Annotations[GatewayAPIListenerAnnotation]
		if !ok {
			continue
		}
		spec := gw.Spec.(*networking.Gateway)
		key := gw.Namespace + "/" + gw.Name
		a := adm[key]
		if a == nil {
			a = &admission{listener: listener, gatewayAPI: spec.GetSelector()[GatewayAPIProxyLabel]}
			adm[key] = a
		}
		for _, s := range spec.GetServers() {
			for _, h := range s.GetHosts() {
				a.add(h, gw.Namespace)
			}
		}
		if a.gatewayAPI != "" && !slices.Contains(gatewayAPI[a.gatewayAPI], gw.Namespace) {
			gatewayAPI[a.gatewayAPI] = append(gatewayAPI[a.gatewayAPI], gw.Namespace)
		}
	}
	if len(adm) == 0 {
		return nil
	}
	ps.reportForeignGatewayAPISelectors(gatewayAPI)
	var refused map[vsBinding]bool
	for _, vs := range ps.virtualServices {
		for i, ref := range vs.Spec.(*networking.VirtualService).GetGateways() {
			if ref == "mesh" {
				continue
			}
			key := ResolveGatewayName(ref, vs.Namespace)
			a, ok := adm[key]
			if !ok || a.admits(vs.Namespace) {
				continue
			}
			if refused == nil {
				refused = map[vsBinding]bool{}
			}
			refused[vsBinding{vs: vs.Key(), gateway: key}] = true
			ps.Errors = append(ps.Errors, &config.Error{
				Source: vs.Source, Key: vs.Key(), Field: fmt.Sprintf("spec.gateways[%d]", i),
				Message: fmt.Sprintf("Gateway %s serves listener %s of Gateway API Gateway %s/%s, whose allowedRoutes do not admit namespace %s; not bound there",
					key, a.listener, strings.SplitN(key, "/", 2)[0], a.gatewayAPI, vs.Namespace),
			})
		}
	}
	return refused
}

// reportForeignGatewayAPISelectors reports the Istio Gateways that select,
// by GatewayAPIProxyLabel, the proxies of a Gateway API Gateway of another
// namespace: servesGatewayAPIProxy serves them nothing there.
func (ps *PushContext) reportForeignGatewayAPISelectors(gatewayAPI map[string][]string) {
	for _, gw := range ps.gateways {
		if _, generated := gw.Annotations[GatewayAPIListenerAnnotation]; generated || gw.Annotations[NamespaceOnlyAnnotation] == "true" {
			continue
		}
		name, ok := gw.Spec.(*networking.Gateway).GetSelector()[GatewayAPIProxyLabel]
		if !ok {
			continue
		}
		for _, ns := range gatewayAPI[name] {
			if ns == gw.Namespace {
				continue
			}
			ps.Errors = append(ps.Errors, &config.Error{
				Source: gw.Source, Key: gw.Key(), Field: "spec.selector",
				Message: fmt.Sprintf("selects the proxies of Gateway API Gateway %s/%s, which take Istio Gateways of their own namespace only; not served to them", ns, name),
			})
		}
	}
}

// servesGatewayAPIProxy reports whether gw may be served to p as far as
// Gateway API isolation goes: a proxy labelled GatewayAPIProxyLabel is a
// Gateway API Gateway's, whose listeners say which namespaces may attach
// routes to it; an Istio Gateway of another namespace would add servers
// (ports, hosts, certificates) that no listener allowed, so only Gateways
// of the proxy's own namespace are served to it. The label is
// self-declared, but claiming it only narrows what a proxy receives.
func servesGatewayAPIProxy(gw config.Config, p *Proxy) bool {
	if _, ok := p.Labels[GatewayAPIProxyLabel]; !ok {
		return true
	}
	return gw.Namespace == p.Namespace
}
