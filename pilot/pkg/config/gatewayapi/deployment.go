package gatewayapi

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// ManagedAnnotation on a Gateway set to "false" opts it out of automated
// deployment: its proxies, Service and ServiceAccount are the user's. Its
// address is then that of the Service named DeploymentName in its
// namespace, if the user made one.
const ManagedAnnotation = "gateway.wayfinder.io/managed"

// ServiceTypeAnnotation on a Gateway sets the type of its Service
// (LoadBalancer by default), under Istio's name for the same thing.
const ServiceTypeAnnotation = "networking.istio.io/service-type"

// DeploymentName names the Deployment, Service, ServiceAccount and
// ConfigMap Wayfinder deploys for a Gateway, as istiod names them:
// GATEWAY-CLASS (Gateway "edge" of class "wayfinder": "edge-wayfinder").
func DeploymentName(g *gw.Gateway) string {
	return g.Name + "-" + string(g.Spec.GatewayClassName)
}

// Managed reports whether Wayfinder deploys a Gateway's proxies: not when
// the Gateway is annotated ManagedAnnotation: "false", nor when one of its
// spec.addresses is a Hostname, which names an existing Service (istiod's
// manual deployment).
func Managed(g *gw.Gateway) bool {
	if strings.EqualFold(g.Annotations[ManagedAnnotation], "false") {
		return false
	}
	_, _, named := addressService(g, "")
	return !named
}

// addressService is the Service the first Hostname entry of a Gateway's
// spec.addresses names: NAME, NAME.NAMESPACE, NAME.NAMESPACE.svc or
// NAME.NAMESPACE.svc.SUFFIX; a bare NAME is of the Gateway's namespace.
func addressService(g *gw.Gateway, domainSuffix string) (namespace, name string, ok bool) {
	for _, a := range g.Spec.Addresses {
		if a.Type == nil || *a.Type != gw.HostnameAddressType {
			continue
		}
		v := strings.TrimSuffix(a.Value, ".")
		if domainSuffix != "" {
			v = strings.TrimSuffix(v, ".svc."+domainSuffix)
		}
		v = strings.TrimSuffix(v, ".svc")
		parts := strings.Split(v, ".")
		switch len(parts) {
		case 1:
			return g.Namespace, parts[0], true
		case 2:
			return parts[1], parts[0], true
		}
		// Another shape (a DNS name outside the cluster): still the
		// user's deployment; it names no Service Wayfinder can read.
		return "", "", true
	}
	return "", "", false
}

// GatewayService is the Service whose address is the Gateway's: the one
// a Hostname address names, else DeploymentName in the Gateway's
// namespace (deployed by Wayfinder, or by the user when opted out). An
// empty name means the address names no Service in the cluster.
func GatewayService(g *gw.Gateway, domainSuffix string) (namespace, name string) {
	if ns, n, ok := addressService(g, domainSuffix); ok {
		return ns, n
	}
	return g.Namespace, DeploymentName(g)
}

// ServiceAddresses are the addresses of a Service as a Gateway reports
// them: its load balancer's ingress IPs and hostnames, else its cluster
// IPs; none while it has neither (a headless Service has none).
func ServiceAddresses(svc *corev1.Service) []gw.GatewayStatusAddress {
	var out []gw.GatewayStatusAddress
	add := func(t gw.AddressType, v string) {
		a := gw.GatewayStatusAddress{Type: ptr(t), Value: v}
		if v != "" && !slices.ContainsFunc(out, func(x gw.GatewayStatusAddress) bool { return x.Value == v }) {
			out = append(out, a)
		}
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		add(gw.IPAddressType, in.IP)
		add(gw.HostnameAddressType, in.Hostname)
	}
	if len(out) > 0 {
		return out
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, ip := range ips {
		if ip != corev1.ClusterIPNone {
			add(gw.IPAddressType, ip)
		}
	}
	return out
}

// gatewayAddress finds a Gateway's addresses from its Service, and names
// that Service (or says why there is none) for the Programmed message.
func gatewayAddress(g *gw.Gateway, in Input, domainSuffix string) ([]gw.GatewayStatusAddress, string) {
	ns, name := GatewayService(g, domainSuffix)
	if name == "" {
		return nil, "its address names no Service of the cluster"
	}
	ref := "Service " + ns + "/" + name
	var svc *corev1.Service
	if in.Services != nil {
		svc = in.Services(ns, name)
	}
	if svc == nil {
		return nil, ref + " does not exist (yet)"
	}
	addrs := ServiceAddresses(svc)
	if len(addrs) == 0 {
		return nil, ref + " has no address yet"
	}
	return addrs, ref
}
