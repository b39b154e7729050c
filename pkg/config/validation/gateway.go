package validation

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

func (v *validator) gateway(gw *networking.Gateway) {
	if len(gw.Servers) == 0 {
		v.add("spec.servers", "at least one server is required")
	}
	v.selectorLabels("spec.selector", gw.Selector)

	// Port names identify servers in Istio's listener and route naming, and
	// server names prefix stats: both must be unique within the Gateway.
	portNames := map[string]int{}
	serverNames := map[string]int{}
	for i, s := range gw.Servers {
		f := at("spec.servers", i)
		if s == nil {
			v.add(f, "server must not be null")
			continue
		}
		v.server(f, s)
		if name := s.GetPort().GetName(); name != "" {
			if j, dup := portNames[name]; dup {
				v.add(f+".port.name", "duplicate port name %q: already used by spec.servers[%d]", name, j)
			} else {
				portNames[name] = i
			}
		}
		if s.Name != "" {
			if j, dup := serverNames[s.Name]; dup {
				v.add(f+".name", "duplicate server name %q: already used by spec.servers[%d]", s.Name, j)
			} else {
				serverNames[s.Name] = i
			}
		}
	}
}

func (v *validator) server(f string, s *networking.Server) {
	unix := strings.HasPrefix(s.Bind, unixPrefix)
	var proto protocol
	protoOK := false
	if p := s.Port; p == nil {
		v.add(f+".port", "port is required")
	} else {
		if unix {
			if p.Number != 0 {
				v.add(f+".port.number", "port number must be 0 when bind is a unix domain socket")
			}
		} else {
			v.checkPort(f+".port.number", p.Number)
		}
		switch proto, protoOK = parseProtocol(p.Protocol); {
		case p.Protocol == "":
			v.add(f+".port.protocol", "protocol is required (one of %s)", protocolList)
		case !protoOK:
			v.add(f+".port.protocol", "unknown protocol %q (want one of %s)", p.Protocol, protocolList)
		}
		if p.Name == "" {
			v.add(f+".port.name", "port name is required")
		}
		if p.TargetPort != 0 {
			v.add(f+".port.targetPort", "targetPort has no effect on a Gateway server; remove it")
		}
	}

	switch {
	case unix:
		if err := validateUnixAddress(strings.TrimPrefix(s.Bind, unixPrefix)); err != nil {
			v.addErr(f+".bind", err)
		}
	case s.Bind != "" && !isIP(s.Bind):
		v.add(f+".bind", "bind %q must be an IP address or unix:///path", s.Bind)
	}

	if len(s.Hosts) == 0 {
		v.add(f+".hosts", "at least one host is required")
	}
	for i, h := range s.Hosts {
		v.gatewayHost(at(f+".hosts", i), h)
	}

	if protoOK {
		if !v.tlsForProtocol(f+".tls", proto, s.Tls) {
			return
		}
	}
	v.serverTLS(f+".tls", s.Tls)
}

// gatewayHost checks one server host: "host", "ns/host", "./host" or
// "*/host", where host is "*", "*.example.com", an FQDN or an IP address.
func (v *validator) gatewayHost(f, h string) {
	ns, name, hasNS := strings.Cut(h, "/")
	if !hasNS {
		name = h
	} else {
		switch {
		case ns == "":
			v.add(f, "host %q: namespace before '/' must not be empty", h)
		case ns != "*" && ns != "." && !isDNS1123Label(ns):
			v.add(f, "host %q: namespace %q must be *, . or a namespace name", h, ns)
		}
	}
	switch {
	case name == "":
		v.add(f, "host %q: host name must not be empty", h)
	case name == "*" || isIP(name):
	case !strings.Contains(name, "."):
		v.add(f, "host %q: short names are not allowed on a gateway; use a fully qualified name or *", h)
	default:
		if err := validateWildcardDomain(name); err != nil {
			v.add(f, "host %q: %v", h, err)
		}
	}
}

// tlsForProtocol checks that TLS settings fit the server's protocol and
// reports whether the settings themselves should be checked further.
func (v *validator) tlsForProtocol(f string, p protocol, tls *networking.ServerTLSSettings) bool {
	switch {
	case p.isTLS():
		if tls == nil {
			v.add(f, "tls settings are required for %s servers", p)
			return false
		}
		return true
	case tls == nil:
		return false
	case p.isHTTP():
		// A plain-text HTTP server may only ask for a redirect to HTTPS.
		if tls.Mode != networking.ServerTLSSettings_PASSTHROUGH || hasServerCertificates(tls) {
			v.add(f, "a plain-text %s server may only set tls.httpsRedirect", p)
		}
		return false
	default:
		v.add(f, "tls settings are only allowed on HTTPS and TLS servers (and httpsRedirect on HTTP)")
		return false
	}
}

func hasServerCertificates(t *networking.ServerTLSSettings) bool {
	return t.ServerCertificate != "" || t.PrivateKey != "" || t.CaCertificates != "" ||
		t.CredentialName != "" || len(t.CredentialNames) > 0 || len(t.TlsCertificates) > 0 ||
		t.CaCrl != "" || t.CaCertCredentialName != ""
}

func (v *validator) serverTLS(f string, t *networking.ServerTLSSettings) {
	if t == nil {
		return
	}
	modeOK := v.checkEnum(f+".mode", networking.ServerTLSSettings_TLSmode_name, int32(t.Mode))
	minOK := v.checkEnum(f+".minProtocolVersion", networking.ServerTLSSettings_TLSProtocol_name, int32(t.MinProtocolVersion))
	maxOK := v.checkEnum(f+".maxProtocolVersion", networking.ServerTLSSettings_TLSProtocol_name, int32(t.MaxProtocolVersion))
	if minOK && maxOK && t.MinProtocolVersion != networking.ServerTLSSettings_TLS_AUTO &&
		t.MaxProtocolVersion != networking.ServerTLSSettings_TLS_AUTO && t.MinProtocolVersion > t.MaxProtocolVersion {
		v.add(f+".maxProtocolVersion", "maxProtocolVersion %v is below minProtocolVersion %v", t.MaxProtocolVersion, t.MinProtocolVersion)
	}

	// Only one way of naming the certificates may be used.
	var sources []string
	if t.CredentialName != "" {
		sources = append(sources, "credentialName")
	}
	if len(t.CredentialNames) > 0 {
		sources = append(sources, "credentialNames")
	}
	if len(t.TlsCertificates) > 0 {
		sources = append(sources, "tlsCertificates")
	}
	if len(sources) > 1 {
		v.add(f, "only one of credentialName, credentialNames and tlsCertificates may be set (found %s)",
			strings.Join(sources, " and "))
	}
	// Two certificates at most: one RSA and one ECDSA.
	if len(t.CredentialNames) > 2 {
		v.add(f+".credentialNames", "at most 2 credential names may be set, found %d", len(t.CredentialNames))
	}
	for i, c := range t.CredentialNames {
		if c == "" {
			v.add(at(f+".credentialNames", i), "credential name must not be empty")
		}
	}
	if len(t.TlsCertificates) > 2 {
		v.add(f+".tlsCertificates", "at most 2 certificates may be set, found %d", len(t.TlsCertificates))
	}
	for i, c := range t.TlsCertificates {
		cf := at(f+".tlsCertificates", i)
		switch {
		case c == nil:
			v.add(cf, "certificate must not be null")
		case c.ServerCertificate == "" || c.PrivateKey == "":
			v.add(cf, "serverCertificate and privateKey are both required")
		}
	}
	v.clientChecks(f, t)
	if !modeOK {
		return
	}

	hasCredential := len(sources) > 0
	switch t.Mode {
	case networking.ServerTLSSettings_ISTIO_MUTUAL:
		// Istio's own certificates are used; naming others is a mistake.
		for _, fld := range []struct{ name, val string }{
			{"serverCertificate", t.ServerCertificate}, {"privateKey", t.PrivateKey},
			{"caCertificates", t.CaCertificates}, {"credentialName", t.CredentialName},
		} {
			if fld.val != "" {
				v.add(f+"."+fld.name, "%s cannot be set with ISTIO_MUTUAL mode", fld.name)
			}
		}
	case networking.ServerTLSSettings_SIMPLE, networking.ServerTLSSettings_MUTUAL, networking.ServerTLSSettings_OPTIONAL_MUTUAL:
		if !hasCredential {
			switch {
			case t.ServerCertificate == "" && t.PrivateKey == "":
				v.add(f, "%v mode needs a credentialName, or serverCertificate and privateKey", t.Mode)
			case t.ServerCertificate == "":
				v.add(f+".serverCertificate", "%v mode needs serverCertificate with privateKey", t.Mode)
			case t.PrivateKey == "":
				v.add(f+".privateKey", "%v mode needs privateKey with serverCertificate", t.Mode)
			}
			if t.Mode != networking.ServerTLSSettings_SIMPLE && t.CaCertificates == "" && t.CaCertCredentialName == "" {
				v.add(f+".caCertificates", "%v mode needs caCertificates (or a credentialName) to verify clients", t.Mode)
			}
		}
		if t.CaCrl != "" {
			switch {
			case t.Mode == networking.ServerTLSSettings_SIMPLE:
				v.add(f+".caCrl", "caCrl has no effect in SIMPLE mode, which does not verify clients")
			case hasCredential:
				v.add(f+".caCrl", "caCrl cannot be combined with credentialName; put the CRL in the credential")
			}
		}
	}
}
