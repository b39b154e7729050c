package validation

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

func (v *validator) serviceEntry(se *networking.ServiceEntry) {
	resolutionOK := v.checkEnum("spec.resolution", networking.ServiceEntry_Resolution_name, int32(se.Resolution))
	v.checkEnum("spec.location", networking.ServiceEntry_Location_name, int32(se.Location))

	if len(se.Hosts) == 0 {
		v.add("spec.hosts", "at least one host is required")
	}
	for i, h := range se.Hosts {
		f := at("spec.hosts", i)
		if h == "*" {
			v.add(f, `host "*" is not allowed on a ServiceEntry`)
			continue
		}
		if err := validateWildcardDomain(h); err != nil {
			v.addErr(f, err)
		}
	}

	for i, a := range se.Addresses {
		f := at("spec.addresses", i)
		if err := validateIPOrCIDR(a); err != nil {
			v.addErr(f, err)
			continue
		}
		// A CIDR block cannot be resolved or given endpoints.
		if strings.Contains(a, "/") && se.Resolution != networking.ServiceEntry_NONE && se.Resolution != networking.ServiceEntry_STATIC {
			v.add(f, "CIDR address %q is only allowed with NONE or STATIC resolution", a)
		}
	}

	portNames := v.servicePorts(se)

	if se.WorkloadSelector != nil {
		if len(se.Endpoints) > 0 {
			v.add("spec.workloadSelector", "workloadSelector and endpoints are mutually exclusive")
		}
		v.selectorLabels("spec.workloadSelector.labels", se.WorkloadSelector.Labels)
	}

	if resolutionOK {
		v.resolution(se, portNames)
	}

	// Plain TCP carries no host name, so several hosts on one TCP port
	// cannot be told apart, unless the proxy just passes traffic through.
	if se.Resolution != networking.ServiceEntry_NONE && len(se.Hosts) > 1 {
		for i, p := range se.Ports {
			if p == nil {
				continue
			}
			if proto, ok := parseProtocol(p.Protocol); !ok || !proto.isHTTP() && !proto.isTLS() {
				v.add(at("spec.ports", i)+".protocol",
					"a ServiceEntry with several hosts needs HTTP or TLS-based ports (unless resolution is NONE); protocol is %q", p.Protocol)
				break
			}
		}
	}
	v.exportTo("spec.exportTo", se.ExportTo, true)
}

// servicePorts checks the ports and returns their names, which endpoints
// refer to.
func (v *validator) servicePorts(se *networking.ServiceEntry) map[string]bool {
	if len(se.Ports) == 0 {
		v.add("spec.ports", "at least one port is required")
	}
	names := map[string]bool{}
	numbers := map[uint32]int{}
	nameAt := map[string]int{}
	for i, p := range se.Ports {
		f := at("spec.ports", i)
		if p == nil {
			v.add(f, "port must not be null")
			continue
		}
		v.checkPort(f+".number", p.Number)
		if j, dup := numbers[p.Number]; dup {
			v.add(f+".number", "duplicate port number %d: already used by spec.ports[%d]", p.Number, j)
		} else {
			numbers[p.Number] = i
		}
		// An empty protocol asks the proxy to detect it.
		if _, ok := parseProtocol(p.Protocol); p.Protocol != "" && !ok {
			v.add(f+".protocol", "unknown protocol %q (want one of %s)", p.Protocol, protocolList)
		}
		switch {
		case p.Name == "":
			v.add(f+".name", "port name is required")
		case !isDNS1123Label(p.Name):
			v.add(f+".name", "port name %q is not a DNS-1123 label", p.Name)
		default:
			if j, dup := nameAt[p.Name]; dup {
				v.add(f+".name", "duplicate port name %q: already used by spec.ports[%d]", p.Name, j)
			} else {
				nameAt[p.Name] = i
			}
		}
		names[p.Name] = true
		if p.TargetPort != 0 {
			v.checkPort(f+".targetPort", p.TargetPort)
		}
	}
	return names
}

// resolution checks that endpoints fit the resolution mode.
func (v *validator) resolution(se *networking.ServiceEntry, portNames map[string]bool) {
	switch se.Resolution {
	case networking.ServiceEntry_NONE:
		if len(se.Endpoints) > 0 {
			v.add("spec.endpoints", "endpoints cannot be set with resolution NONE")
		}
	case networking.ServiceEntry_STATIC:
		if len(se.Endpoints) == 0 && se.WorkloadSelector == nil {
			v.add("spec.endpoints", "resolution STATIC needs endpoints (or a workloadSelector)")
		}
		unix := 0
		for i, e := range se.Endpoints {
			if v.endpoint(at("spec.endpoints", i), e, portNames, false) {
				unix++
			}
		}
		if unix > 0 && len(se.Ports) != 1 {
			v.add("spec.ports", "a ServiceEntry with unix domain socket endpoints must have exactly one port")
		}
	case networking.ServiceEntry_DNS, networking.ServiceEntry_DNS_ROUND_ROBIN:
		if len(se.Endpoints) == 0 {
			// The hosts themselves are resolved, so they must be real names.
			for i, h := range se.Hosts {
				if strings.HasPrefix(h, "*") {
					v.add(at("spec.hosts", i), "host %q: resolution %v without endpoints resolves the hosts, which cannot be wildcards",
						h, se.Resolution)
				}
			}
		}
		if se.Resolution == networking.ServiceEntry_DNS_ROUND_ROBIN && len(se.Endpoints) > 1 {
			v.add("spec.endpoints", "resolution DNS_ROUND_ROBIN allows at most one endpoint, found %d", len(se.Endpoints))
		}
		for i, e := range se.Endpoints {
			v.endpoint(at("spec.endpoints", i), e, portNames, true)
		}
	case networking.ServiceEntry_DYNAMIC_DNS:
		// The destination is resolved from each request's host, so the
		// hosts must be wildcards and there is nothing to list.
		for i, h := range se.Hosts {
			if !strings.HasPrefix(h, "*.") {
				v.add(at("spec.hosts", i), "host %q: resolution DYNAMIC_DNS needs wildcard hosts (*.example.com)", h)
			}
		}
		if len(se.Endpoints) > 0 {
			v.add("spec.endpoints", "endpoints cannot be set with resolution DYNAMIC_DNS")
		}
	}
}

// endpoint checks one endpoint and reports whether it is a unix socket.
// STATIC endpoints need IP addresses or unix sockets; DNS endpoints may
// also be host names.
func (v *validator) endpoint(f string, e *networking.WorkloadEntry, portNames map[string]bool, dns bool) bool {
	if e == nil {
		v.add(f, "endpoint must not be null")
		return false
	}
	unix := false
	switch a := e.Address; {
	case a == "":
		// An endpoint reached through a network gateway has no address.
		if e.Network == "" {
			v.add(f+".address", "address is required")
		}
	case strings.HasPrefix(a, unixPrefix):
		unix = true
		if dns {
			v.add(f+".address", "unix domain socket endpoints need resolution STATIC")
		} else if err := validateUnixAddress(strings.TrimPrefix(a, unixPrefix)); err != nil {
			v.addErr(f+".address", err)
		}
		if len(e.Ports) > 0 {
			v.add(f+".ports", "a unix domain socket endpoint cannot have ports")
		}
	case isIP(a):
	case !dns:
		v.add(f+".address", "address %q must be an IP address or unix:///path with resolution STATIC", a)
	default:
		if err := validateFQDN(a); err != nil {
			v.add(f+".address", "address %q must be an IP address or a host name: %v", a, err)
		}
	}
	for _, name := range sortedKeys(e.Ports) {
		pf := key(f+".ports", name)
		if !portNames[name] {
			v.add(pf, "port %q is not one of the ServiceEntry's port names", name)
		}
		v.checkPort(pf, e.Ports[name])
	}
	v.labels(f+".labels", e.Labels)
	return unix
}
