package model

import (
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// TLSServer is a Gateway server whose connections are not HTTP: TLS passed
// through untouched and routed by SNI (tls.mode PASSTHROUGH, VirtualService
// tls routes), or TLS terminated with TCP inside (protocol TLS, mode
// SIMPLE, MUTUAL or OPTIONAL_MUTUAL; VirtualService tcp routes).
type TLSServer struct {
	GatewayServer
	// Passthrough is set for tls.mode PASSTHROUGH: the proxy does not
	// terminate TLS, and filter chains come from the tls routes' sniHosts.
	Passthrough bool
	// ServerNames are the SNI names the server's hosts stand for, sorted;
	// empty is any name. A terminating server's filter chain matches them.
	ServerNames []string
	// Credential is tls.credentialName, as for HTTPSServer; zero for
	// certificate files and for passthrough.
	Credential Credential
}

// Mutual reports whether the server asks clients for a certificate
// (tls.mode MUTUAL or OPTIONAL_MUTUAL) and so needs a CA to check it.
func (s GatewayServer) Mutual() bool {
	m := s.Server.GetTls().GetMode()
	return m == networking.ServerTLSSettings_MUTUAL || m == networking.ServerTLSSettings_OPTIONAL_MUTUAL
}

// CASuffix is appended to a credential's SDS resource name to name the
// CA bundle that verifies client certificates (or, for a DestinationRule,
// the upstream), as Istio names it ("kubernetes://NAME-cacert"). It is
// also the suffix of the Secret Istio reads the CA from when the
// credential's own Secret has no ca.crt.
const CASuffix = "-cacert"

// serverKind is what a port carries; a port carries one kind.
type serverKind string

const (
	kindHTTP serverKind = "plain HTTP"
	kindTCP  serverKind = "plain TCP"
	kindTLS  serverKind = "TLS (HTTPS or TLS servers, told apart by SNI)"
)

// portClaim is the first server on a port and the kind it gave the port.
type portClaim struct {
	kind  serverKind
	first GatewayServer
}

// serverKind sorts a server by what its port will carry, or reports why it
// is not served.
func (mg *MergedGateway) serverKind(gs GatewayServer) (serverKind, bool) {
	proto := strings.ToUpper(gs.Server.GetPort().GetProtocol())
	tls := gs.Server.GetTls()
	switch {
	case IsHTTPProtocol(proto):
		return kindHTTP, true
	case proto == "TCP" || proto == "MONGO" || proto == "MYSQL" || proto == "REDIS":
		// Istio proxies these as opaque TCP by default.
		return kindTCP, true
	case proto != "HTTPS" && proto != "TLS":
		mg.errorf(gs, "port.protocol", "protocol %q is not served; HTTP, HTTP2, GRPC, HTTPS, TLS and TCP servers are; server skipped", gs.Server.GetPort().GetProtocol())
		return "", false
	case tls == nil:
		mg.errorf(gs, "tls", "tls settings are required for %s servers; server skipped", proto)
		return "", false
	}
	switch tls.GetMode() {
	case networking.ServerTLSSettings_SIMPLE, networking.ServerTLSSettings_MUTUAL,
		networking.ServerTLSSettings_OPTIONAL_MUTUAL, networking.ServerTLSSettings_PASSTHROUGH:
		return kindTLS, true
	}
	mg.errorf(gs, "tls.mode", "tls mode %s is not served; SIMPLE, MUTUAL, OPTIONAL_MUTUAL and PASSTHROUGH are; server skipped", tls.GetMode())
	return "", false
}

// claimPort gives the port to the first server's kind. As in Istio, plain
// HTTP servers merge, TLS servers share the port by SNI, and anything else
// on a taken port (a second TCP server, HTTP next to TLS) is a conflict:
// the later server is skipped.
func (mg *MergedGateway) claimPort(ports map[uint32]portClaim, gs GatewayServer, kind serverKind) bool {
	port := gs.Server.GetPort().GetNumber()
	prev, taken := ports[port]
	switch {
	case !taken:
		ports[port] = portClaim{kind: kind, first: gs}
		return true
	case prev.kind != kind:
		mg.errorf(gs, "port.protocol", "port %d already serves %s for %s %s; a port serves one kind of traffic; server skipped",
			port, prev.kind, prev.first.Gateway, prev.first.Field(""))
		return false
	case kind == kindTCP:
		mg.errorf(gs, "port", "port %d already serves plain TCP for %s %s; only one TCP server may use a port; server skipped",
			port, prev.first.Gateway, prev.first.Field(""))
		return false
	}
	return true
}

// isHTTPSTermination reports whether a TLS-kind server carries HTTP inside
// the TLS it terminates: protocol HTTPS and not passthrough.
func isHTTPSTermination(s *networking.Server) bool {
	return strings.EqualFold(s.GetPort().GetProtocol(), "HTTPS") && s.GetTls().GetMode() != networking.ServerTLSSettings_PASSTHROUGH
}

// tlsServer checks a TLS server that does not carry HTTP.
func (mg *MergedGateway) tlsServer(gs GatewayServer) (TLSServer, bool) {
	ts := TLSServer{GatewayServer: gs, Passthrough: gs.Server.GetTls().GetMode() == networking.ServerTLSSettings_PASSTHROUGH}
	if !ts.Passthrough {
		var ok bool
		if ts.Credential, ok = mg.termination(gs); !ok {
			return TLSServer{}, false
		}
	}
	var ok bool
	if ts.ServerNames, ok = mg.serverNames(gs); !ok {
		return TLSServer{}, false
	}
	return ts, true
}

// termination checks where a terminating server's certificate comes from:
// a Secret (credentialName, resolved for each proxy: see Credential) or
// files. A server that verifies clients with files needs caCertificates.
func (mg *MergedGateway) termination(gs GatewayServer) (Credential, bool) {
	tls := gs.Server.GetTls()
	switch {
	case len(tls.GetCredentialNames()) > 0 || len(tls.GetTlsCertificates()) > 0:
		mg.errorf(gs, "tls", "credentialNames and tlsCertificates are not served yet; use credentialName; server skipped")
	case tls.GetCaCertCredentialName() != "" && gs.ClientCA == "":
		// Verifying clients against another CA than the one named would
		// accept or refuse the wrong clients: the server is not served.
		mg.errorf(gs, "tls.caCertCredentialName", "caCertCredentialName is not served yet; put the CA in the credentialName Secret (ca.crt) or in Secret NAME-cacert; server skipped")
	case tls.GetCredentialName() != "":
		c, err := ParseCredentialName(tls.GetCredentialName())
		if err != nil {
			mg.errorf(gs, "tls.credentialName", "%v; server skipped", err)
			return Credential{}, false
		}
		return c, true
	case tls.GetServerCertificate() == "" || tls.GetPrivateKey() == "":
		mg.errorf(gs, "tls", "%s TLS needs credentialName, or serverCertificate and privateKey; server skipped", tls.GetMode())
	case gs.Mutual() && tls.GetCaCertificates() == "":
		mg.errorf(gs, "tls.caCertificates", "%s TLS with certificate files needs caCertificates to verify clients; server skipped", tls.GetMode())
	default:
		return Credential{}, true
	}
	return Credential{}, false
}

// serverNames are the SNI names of the server's hosts (namespace parts
// dropped), sorted; nil when a host is "*" and the server takes any name.
func (mg *MergedGateway) serverNames(gs GatewayServer) ([]string, bool) {
	var names []string
	for _, h := range gs.Server.GetHosts() {
		if _, name, ok := strings.Cut(h, "/"); ok {
			h = name
		}
		h = strings.ToLower(h)
		if h == "*" {
			return nil, true
		}
		// Envoy matches a wildcard only as the whole leftmost label.
		if strings.HasPrefix(h, "*") && !strings.HasPrefix(h, "*.") {
			mg.errorf(gs, "hosts", "host %q cannot be matched by SNI: a wildcard must be the whole leftmost label (*.example.com); host left out", h)
			continue
		}
		names = append(names, h)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		mg.errorf(gs, "hosts", "no host can be matched by SNI; server skipped")
		return nil, false
	}
	return names, true
}
