package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Resolution is how a service's endpoints are found.
type Resolution uint8

const (
	// ClientSideLB: endpoints are known (STATIC ServiceEntry, EndpointSlices) and sent over EDS.
	ClientSideLB Resolution = iota
	// DNSLB: the proxy resolves the endpoint addresses (DNS ServiceEntry).
	DNSLB
	// DNSRoundRobinLB: the proxy resolves one address at a time (DNS_ROUND_ROBIN).
	DNSRoundRobinLB
	// Passthrough: traffic goes to the original destination (NONE).
	Passthrough
)

// Port is one service port.
type Port struct {
	Name     string
	Number   uint32
	Protocol string // upper case: HTTP, HTTP2, GRPC, TCP, TLS, HTTPS
	// TargetPort is the default endpoint port; 0 means Number.
	TargetPort uint32
}

// Endpoint is one backend instance of a service.
type Endpoint struct {
	Address string
	// Ports maps a service port name to the endpoint's port, where it differs.
	Ports    map[string]uint32
	Labels   map[string]string
	Weight   uint32
	Locality string
	Network  string
}

// PortFor returns the port this endpoint listens on for service port p.
func (e *Endpoint) PortFor(p Port) uint32 {
	if n, ok := e.Ports[p.Name]; ok && n != 0 {
		return n
	}
	if p.TargetPort != 0 {
		return p.TargetPort
	}
	return p.Number
}

// Service is one hostname with its ports and endpoints, from any registry.
type Service struct {
	Hostname     string
	Namespace    string
	Ports        []Port
	Resolution   Resolution
	MeshExternal bool
	Endpoints    []*Endpoint
	// Source is the object the service came from.
	Source            config.Key
	CreationTimestamp time.Time
	// ExportTo are the namespaces that see the service: a ServiceEntry's
	// exportTo, a Kubernetes Service's networking.istio.io/exportTo
	// annotation. Empty means the default (every namespace).
	ExportTo []string
}

// Port returns the service port with the given number.
func (s *Service) Port(number uint32) (Port, bool) {
	for _, p := range s.Ports {
		if p.Number == number {
			return p, true
		}
	}
	return Port{}, false
}

// SubsetLabelsMatch reports whether an endpoint with labels has every label
// of the subset selector.
func SubsetLabelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ClusterName builds Istio's cluster name "outbound|PORT|SUBSET|HOST".
func ClusterName(port uint32, subset, host string) string {
	return "outbound|" + strconv.FormatUint(uint64(port), 10) + "|" + subset + "|" + host
}

// ParseClusterName splits a name built by ClusterName.
func ParseClusterName(name string) (port uint32, subset, host string, err error) {
	parts := strings.Split(name, "|")
	if len(parts) != 4 || parts[0] != "outbound" {
		return 0, "", "", fmt.Errorf("cluster name %q is not outbound|PORT|SUBSET|HOST", name)
	}
	n, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return 0, "", "", fmt.Errorf("cluster name %q: port: %w", name, err)
	}
	return uint32(n), parts[2], parts[3], nil
}

// servicesFromServiceEntry turns each host of a ServiceEntry into a Service.
func servicesFromServiceEntry(c config.Config) []*Service {
	se := c.Spec.(*networking.ServiceEntry)
	ports := make([]Port, 0, len(se.GetPorts()))
	for _, p := range se.GetPorts() {
		ports = append(ports, Port{Name: p.GetName(), Number: p.GetNumber(), Protocol: strings.ToUpper(p.GetProtocol()), TargetPort: p.GetTargetPort()})
	}
	res := ClientSideLB
	switch se.GetResolution() {
	case networking.ServiceEntry_DNS:
		res = DNSLB
	case networking.ServiceEntry_DNS_ROUND_ROBIN:
		res = DNSRoundRobinLB
	case networking.ServiceEntry_NONE:
		res = Passthrough
	}
	eps := make([]*Endpoint, 0, len(se.GetEndpoints()))
	for _, we := range se.GetEndpoints() {
		eps = append(eps, &Endpoint{Address: we.GetAddress(), Ports: we.GetPorts(), Labels: we.GetLabels(),
			Weight: we.GetWeight(), Locality: we.GetLocality(), Network: we.GetNetwork()})
	}
	out := make([]*Service, 0, len(se.GetHosts()))
	for _, h := range se.GetHosts() {
		out = append(out, &Service{
			Hostname: h, Namespace: c.Namespace, Ports: ports, Resolution: res,
			MeshExternal: se.GetLocation() == networking.ServiceEntry_MESH_EXTERNAL,
			Endpoints:    eps, Source: c.Key(), CreationTimestamp: c.CreationTimestamp, ExportTo: se.GetExportTo(),
		})
	}
	return out
}
