package kube

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Hostname is the cluster-local name of a Service: NAME.NS.svc.SUFFIX.
func Hostname(name, namespace, domainSuffix string) string {
	return name + "." + namespace + ".svc." + domainSuffix
}

// ServiceKey is the config.Key a Kubernetes Service is known by in
// model.Service.Source and in PushRequest.ConfigsUpdated: Kind is zero
// (Services are not an Istio config kind), Namespace is the Service's
// namespace and Name is its hostname.
func ServiceKey(namespace, hostname string) config.Key {
	return config.Key{Namespace: namespace, Name: hostname}
}

// Protocol returns the protocol of a Service port the way Istio reads it:
// appProtocol first, then the port name ("http", or a prefix before "-":
// "http-web", "grpc-api"). Anything unrecognised is TCP: a gateway's
// cluster for an unnamed port is built as for TCP.
func Protocol(p corev1.ServicePort) string {
	if p.AppProtocol != nil {
		if proto, ok := protocolName(*p.AppProtocol); ok {
			return proto
		}
	}
	name := strings.ToLower(p.Name)
	if i := strings.IndexByte(name, '-'); i >= 0 {
		name = name[:i]
	}
	if proto, ok := protocolName(name); ok {
		return proto
	}
	return "TCP"
}

func protocolName(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "http", "http1", "kubernetes.io/ws":
		return "HTTP", true
	case "http2", "h2c", "kubernetes.io/h2c":
		return "HTTP2", true
	case "grpc", "grpc-web":
		return "GRPC", true
	case "https", "kubernetes.io/wss":
		return "HTTPS", true
	case "tls":
		return "TLS", true
	case "tcp", "mongo", "mysql", "redis":
		return "TCP", true
	}
	return "", false
}

// podInfo is what the registry keeps of a Pod: its labels, for
// DestinationRule subsets.
type podInfo struct {
	labels map[string]string
}

// buildService turns a Service and its EndpointSlices into a
// model.Service. pods looks a Pod up by namespace/name (targetRef). The
// result shares nothing with the inputs.
//
// Endpoints follow Istio's reading of EndpointSlice conditions: an
// endpoint whose ready condition is true or unset is healthy and sent;
// one that is serving but terminating would be sent as DRAINING by
// Istio, which model.Endpoint cannot express yet, so it is left out like
// any other endpoint that is not ready.
func buildService(svc *corev1.Service, slices_ []*discoveryv1.EndpointSlice, domainSuffix string, pods func(ns, name string) *podInfo) (*model.Service, []string) {
	host := Hostname(svc.Name, svc.Namespace, domainSuffix)
	out := &model.Service{
		Hostname:          host,
		Namespace:         svc.Namespace,
		Resolution:        model.ClientSideLB,
		Source:            ServiceKey(svc.Namespace, host),
		CreationTimestamp: svc.CreationTimestamp.Time,
		// Istio's annotation, as istiod reads it (model.Scoping).
		ExportTo: model.ParseExportToAnnotation(svc.Annotations[model.ExportToAnnotation]),
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			continue // UDP and SCTP are not proxied
		}
		mp := model.Port{Name: p.Name, Number: uint32(p.Port), Protocol: Protocol(p)}
		if p.TargetPort.IntValue() > 0 {
			mp.TargetPort = uint32(p.TargetPort.IntValue())
		}
		out.Ports = append(out.Ports, mp)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		out.Resolution = model.DNSLB
		out.Endpoints = []*model.Endpoint{{Address: svc.Spec.ExternalName}}
		return out, nil
	}
	byAddr := map[string]*model.Endpoint{}
	var podRefs []string
	for _, es := range slices_ {
		if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		// The slice's ports carry the resolved numbers of named target
		// ports, by service port name.
		ports := map[string]uint32{}
		for _, p := range es.Ports {
			if p.Port != nil && (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) {
				name := ""
				if p.Name != nil {
					name = *p.Name
				}
				ports[name] = uint32(*p.Port)
			}
		}
		for _, ep := range es.Endpoints {
			var labels map[string]string
			if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
				ns := cmp.Or(ref.Namespace, es.Namespace)
				podRefs = append(podRefs, ns+"/"+ref.Name)
				if pi := pods(ns, ref.Name); pi != nil {
					labels = maps.Clone(pi.labels)
				}
			}
			if !ready(ep.Conditions) {
				continue
			}
			locality := ""
			if ep.Zone != nil && *ep.Zone != "" {
				locality = "/" + *ep.Zone
			}
			for _, addr := range ep.Addresses {
				if _, dup := byAddr[addr]; dup {
					continue // the same address in two slices while they are being rebalanced
				}
				byAddr[addr] = &model.Endpoint{Address: addr, Ports: maps.Clone(ports), Labels: labels, Locality: locality}
			}
		}
	}
	for _, addr := range slices.Sorted(maps.Keys(byAddr)) {
		out.Endpoints = append(out.Endpoints, byAddr[addr])
	}
	slices.Sort(podRefs)
	return out, slices.Compact(podRefs)
}

// ready: Kubernetes says consumers should treat an unset ready condition
// as ready.
func ready(c discoveryv1.EndpointConditions) bool {
	return c.Ready == nil || *c.Ready
}

// sameShape reports whether a and b differ in nothing but endpoints: the
// change needs no new clusters, listeners or routes.
func sameShape(a, b *model.Service) bool {
	return a.Hostname == b.Hostname && a.Namespace == b.Namespace && a.Resolution == b.Resolution &&
		a.MeshExternal == b.MeshExternal && a.Source == b.Source && a.CreationTimestamp.Equal(b.CreationTimestamp) &&
		slices.Equal(a.Ports, b.Ports) && slices.Equal(a.ExportTo, b.ExportTo)
}

// sameEndpoints compares endpoint lists, both sorted by address.
func sameEndpoints(a, b []*model.Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y *model.Endpoint) bool {
		return x.Address == y.Address && maps.Equal(x.Ports, y.Ports) && maps.Equal(x.Labels, y.Labels) &&
			x.Weight == y.Weight && x.Locality == y.Locality && x.Network == y.Network
	})
}

func slicesSort(s []string) { slices.Sort(s) }

func sortSlices(eps []*discoveryv1.EndpointSlice) {
	slices.SortFunc(eps, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
}
