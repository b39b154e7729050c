package gatewayapi

import (
	"cmp"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// IstioGroup is the API group of Istio's networking kinds. A backendRef of
// this group and kind Hostname names a host a ServiceEntry declares, as
// istiod 1.29 accepts it (its only Istio backend kind; kind ServiceEntry
// is refused there too).
const IstioGroup = "networking.istio.io"

// HostnameKind is the backendRef kind naming a ServiceEntry host.
const HostnameKind = "Hostname"

// hostIndex finds the ServiceEntry that defines a host for the push
// context: of those declaring it, the oldest, then by namespace and name
// (model.NewPushContext's rule).
type hostIndex map[string]config.Config

func newHostIndex(ses []config.Config) hostIndex {
	out := hostIndex{}
	for _, se := range ses {
		spec, ok := se.Spec.(*networking.ServiceEntry)
		if !ok {
			continue
		}
		for _, h := range spec.GetHosts() {
			h = strings.ToLower(h)
			if prev, ok := out[h]; ok && compareConfigs(prev, se) <= 0 {
				continue
			}
			out[h] = se
		}
	}
	return out
}

func compareConfigs(a, b config.Config) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// hostnameBackend resolves a backendRef of kind Hostname: the host of a
// ServiceEntry, which the cluster translation serves like any other (its
// cluster is outbound|PORT||HOST). As in istiod, namespace may not be set
// (the host names the backend). Unlike istiod, which only looks at
// exportTo, a ServiceEntry of another namespace than the route's needs a
// ReferenceGrant there to kind Hostname (group networking.istio.io), named
// by the host or unnamed: the same rule as for a Service.
func (c *converter) hostnameBackend(src, ns string, ref gw.BackendObjectReference, field string) (*networking.Destination, bool) {
	host := strings.ToLower(string(ref.Name))
	if ref.Namespace != nil {
		c.errorf(src, field+".namespace", "must not be set for kind Hostname (the host names the backend); backend skipped")
		c.st.refUnresolved(src, gw.RouteReasonUnsupportedValue, "%s.namespace: must not be set for kind Hostname", field)
		return nil, false
	}
	if ref.Port == nil {
		c.errorf(src, field+".port", "a port is required for a Hostname backend; backend skipped")
		c.st.refUnresolved(src, gw.RouteReasonUnsupportedValue, "%s.port: a port is required for a Hostname backend", field)
		return nil, false
	}
	se, ok := c.seHosts[host]
	if !ok {
		c.errorf(src, field, "no ServiceEntry declares host %s (BackendNotFound); backend skipped", host)
		c.st.refUnresolved(src, gw.RouteReasonBackendNotFound, "%s: no ServiceEntry declares host %s", field, host)
		return nil, false
	}
	fromKind, _, _ := strings.Cut(src, " ")
	if se.Namespace != ns && !c.grants.allowed(fromKind, ns, IstioGroup, HostnameKind, se.Namespace, host) {
		c.errorf(src, field, "host %s is declared by ServiceEntry %s/%s of another namespace and no ReferenceGrant there allows it (RefNotPermitted); backend skipped", host, se.Namespace, se.Name)
		c.st.refUnresolved(src, gw.RouteReasonRefNotPermitted, "%s: host %s is declared by ServiceEntry %s/%s of another namespace and no ReferenceGrant allows it", field, host, se.Namespace, se.Name)
		return nil, false
	}
	hasPort := false
	for _, p := range se.Spec.(*networking.ServiceEntry).GetPorts() {
		hasPort = hasPort || p.GetNumber() == uint32(*ref.Port)
	}
	if !hasPort {
		c.errorf(src, field+".port", "ServiceEntry %s/%s has no port %d for host %s (BackendNotFound); backend skipped", se.Namespace, se.Name, *ref.Port, host)
		c.st.refUnresolved(src, gw.RouteReasonBackendNotFound, "%s.port: ServiceEntry %s/%s has no port %d", field, se.Namespace, se.Name, *ref.Port)
		return nil, false
	}
	return &networking.Destination{Host: host, Port: &networking.PortSelector{Number: uint32(*ref.Port)}}, true
}
