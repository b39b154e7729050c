package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// GatewayServer is one server of one Gateway.
type GatewayServer struct {
	Server *networking.Server
	// Gateway is the Gateway the server belongs to.
	Gateway config.Key
	// Source is the Gateway's source, for errors.
	Source string
	// Index is the server's position in spec.servers, for error fields.
	Index int
}

// Field is the path of one of the server's fields ("" for the server), for errors.
func (s GatewayServer) Field(sub string) string {
	f := fmt.Sprintf("spec.servers[%d]", s.Index)
	if sub != "" {
		f += "." + sub
	}
	return f
}

// SecretRef names a Kubernetes Secret.
type SecretRef struct {
	Namespace string
	Name      string
}

// String renders "namespace/name".
func (r SecretRef) String() string { return r.Namespace + "/" + r.Name }

// HTTPSServer is a server that terminates TLS and serves HTTP inside it.
type HTTPSServer struct {
	GatewayServer
	// RouteName is the server's own route configuration, named as Istio
	// names it: "https.443.PORTNAME.GATEWAY.NAMESPACE".
	RouteName string
	// ServerNames are the SNI names the server's filter chain matches,
	// sorted; empty matches any name (the server has host "*").
	ServerNames []string
	// Credential is tls.credentialName, resolved for each proxy in its
	// own namespace unless it names one (see Credential). It is zero when
	// the server names certificate files (tls.serverCertificate and
	// tls.privateKey).
	Credential Credential
}

// MergedGateway is every server of the Gateways selecting one proxy,
// grouped by port. It is built once per distinct gateway configuration.
type MergedGateway struct {
	Gateways []config.Config
	// HTTPPorts are the ports with plain HTTP servers (HTTP, HTTP2, GRPC), ascending.
	HTTPPorts []uint32
	// HTTPServers holds each HTTP port's servers, in Gateway then server order.
	HTTPServers map[uint32][]GatewayServer
	// HTTPSPorts are the ports with TLS-terminating HTTPS servers, ascending.
	HTTPSPorts []uint32
	// HTTPSServers holds each HTTPS port's servers, in Gateway then server
	// order. Each becomes one filter chain and one route configuration.
	HTTPSServers map[uint32][]HTTPSServer
	// Errors are servers that could not be used.
	Errors []*config.Error
}

// ListenerName is Istio's gateway listener name, "0.0.0.0_80".
func ListenerName(port uint32) string { return "0.0.0.0_" + strconv.FormatUint(uint64(port), 10) }

// RouteName is Istio's gateway route configuration name, "http.80".
func RouteName(port uint32) string { return "http." + strconv.FormatUint(uint64(port), 10) }

// HTTPSRouteName is Istio's route configuration name for one HTTPS server:
// "https.PORT.PORTNAME.GATEWAY.NAMESPACE".
func HTTPSRouteName(port uint32, portName string, gateway config.Key) string {
	return "https." + strconv.FormatUint(uint64(port), 10) + "." + portName + "." + gateway.Name + "." + gateway.Namespace
}

// IsHTTPProtocol reports whether a gateway or service port protocol carries HTTP.
func IsHTTPProtocol(p string) bool {
	switch strings.ToUpper(p) {
	case "HTTP", "HTTP2", "GRPC", "GRPC-WEB":
		return true
	}
	return false
}

// MergeGateways groups the servers of gws (sorted by namespace and name) by
// port. A port serves either plain HTTP or HTTPS: the first server on it
// decides, and servers of the other kind are reported and skipped. Servers
// whose protocol or TLS mode is not served yet are reported and skipped.
func MergeGateways(gws []config.Config) *MergedGateway {
	mg := &MergedGateway{Gateways: gws, HTTPServers: map[uint32][]GatewayServer{}, HTTPSServers: map[uint32][]HTTPSServer{}}
	// sni records, per HTTPS port, which server claimed each SNI name
	// ("" for the catch-all chain): Envoy rejects a listener with two
	// filter chains matching the same name.
	sni := map[uint32]map[string]GatewayServer{}
	routeNames := map[string]bool{}
	for _, gw := range gws {
		for i, s := range gw.Spec.(*networking.Gateway).GetServers() {
			gs := GatewayServer{Server: s, Gateway: gw.Key(), Source: gw.Source, Index: i}
			port := s.GetPort().GetNumber()
			proto := strings.ToUpper(s.GetPort().GetProtocol())
			switch {
			case IsHTTPProtocol(proto):
				if _, ok := mg.HTTPSServers[port]; ok {
					mg.errorf(gs, "port.protocol", "port %d already serves HTTPS for an earlier server; a port serves either HTTP or HTTPS; server skipped", port)
					continue
				}
				if _, ok := mg.HTTPServers[port]; !ok {
					mg.HTTPPorts = append(mg.HTTPPorts, port)
				}
				mg.HTTPServers[port] = append(mg.HTTPServers[port], gs)
			case proto == "HTTPS":
				hs, ok := mg.httpsServer(gs)
				if !ok {
					continue
				}
				if _, ok := mg.HTTPServers[port]; ok {
					mg.errorf(gs, "port.protocol", "port %d already serves plain HTTP for an earlier server; a port serves either HTTP or HTTPS; server skipped", port)
					continue
				}
				if routeNames[hs.RouteName] {
					mg.errorf(gs, "port.name", "route configuration %s is already used by another server; port names must be unique within a Gateway; server skipped", hs.RouteName)
					continue
				}
				if sni[port] == nil {
					sni[port] = map[string]GatewayServer{}
				}
				if !mg.claimServerNames(&hs, sni[port]) {
					continue
				}
				routeNames[hs.RouteName] = true
				if _, ok := mg.HTTPSServers[port]; !ok {
					mg.HTTPSPorts = append(mg.HTTPSPorts, port)
				}
				mg.HTTPSServers[port] = append(mg.HTTPSServers[port], hs)
			default:
				mg.errorf(gs, "port.protocol", "protocol %q is not served yet; only HTTP, HTTP2, GRPC and HTTPS servers are; server skipped", s.GetPort().GetProtocol())
			}
		}
	}
	slices.Sort(mg.HTTPPorts)
	slices.Sort(mg.HTTPSPorts)
	return mg
}

func (mg *MergedGateway) errorf(s GatewayServer, field, format string, args ...any) {
	mg.Errors = append(mg.Errors, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(field), Message: fmt.Sprintf(format, args...)})
}

func (mg *MergedGateway) warnf(s GatewayServer, field, format string, args ...any) {
	mg.Errors = append(mg.Errors, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(field), Message: fmt.Sprintf(format, args...), Warning: true})
}

// httpsServer checks an HTTPS server's TLS settings: only SIMPLE
// termination is served, with the certificate from a Secret or from files.
func (mg *MergedGateway) httpsServer(gs GatewayServer) (HTTPSServer, bool) {
	tls := gs.Server.GetTls()
	switch {
	case tls == nil:
		mg.errorf(gs, "tls", "tls settings are required for HTTPS servers; server skipped")
		return HTTPSServer{}, false
	case tls.GetMode() != networking.ServerTLSSettings_SIMPLE:
		mg.errorf(gs, "tls.mode", "tls mode %s is not served yet; only SIMPLE is; server skipped", tls.GetMode())
		return HTTPSServer{}, false
	}
	hs := HTTPSServer{GatewayServer: gs, RouteName: HTTPSRouteName(gs.Server.GetPort().GetNumber(), gs.Server.GetPort().GetName(), gs.Gateway)}
	switch {
	case tls.GetCredentialName() != "":
		c, err := ParseCredentialName(tls.GetCredentialName())
		if err != nil {
			mg.errorf(gs, "tls.credentialName", "%v; server skipped", err)
			return HTTPSServer{}, false
		}
		hs.Credential = c
	case len(tls.GetCredentialNames()) > 0 || len(tls.GetTlsCertificates()) > 0:
		mg.errorf(gs, "tls", "credentialNames and tlsCertificates are not served yet; use credentialName; server skipped")
		return HTTPSServer{}, false
	case tls.GetServerCertificate() == "" || tls.GetPrivateKey() == "":
		mg.errorf(gs, "tls", "SIMPLE TLS needs credentialName, or serverCertificate and privateKey; server skipped")
		return HTTPSServer{}, false
	}
	for _, h := range gs.Server.GetHosts() {
		if _, name, ok := strings.Cut(h, "/"); ok {
			h = name
		}
		h = strings.ToLower(h)
		if h == "*" {
			hs.ServerNames = nil
			return hs, true
		}
		// Envoy matches a wildcard only as the whole leftmost label.
		if strings.HasPrefix(h, "*") && !strings.HasPrefix(h, "*.") {
			mg.errorf(gs, "hosts", "host %q cannot be matched by SNI: a wildcard must be the whole leftmost label (*.example.com); host left out", h)
			continue
		}
		hs.ServerNames = append(hs.ServerNames, h)
	}
	slices.Sort(hs.ServerNames)
	hs.ServerNames = slices.Compact(hs.ServerNames)
	if len(hs.ServerNames) == 0 {
		mg.errorf(gs, "hosts", "no host can be matched by SNI; server skipped")
		return HTTPSServer{}, false
	}
	return hs, true
}

// claimServerNames gives hs the SNI names no earlier server on the port
// has. Envoy rejects a listener whose filter chains match the same name,
// so the first server keeps a contested name and later ones lose it.
func (mg *MergedGateway) claimServerNames(hs *HTTPSServer, claimed map[string]GatewayServer) bool {
	if len(hs.ServerNames) == 0 {
		if prev, ok := claimed[""]; ok {
			mg.errorf(hs.GatewayServer, "hosts", "host * on port %d is already served by %s %s; server skipped", hs.Server.GetPort().GetNumber(), prev.Gateway, prev.Field(""))
			return false
		}
		claimed[""] = hs.GatewayServer
		return true
	}
	var kept, lost []string
	for _, n := range hs.ServerNames {
		if _, ok := claimed[n]; ok {
			lost = append(lost, n)
			continue
		}
		kept = append(kept, n)
	}
	if len(kept) == 0 {
		mg.errorf(hs.GatewayServer, "hosts", "every host on port %d (%s) is already served by earlier servers; server skipped", hs.Server.GetPort().GetNumber(), strings.Join(lost, ", "))
		return false
	}
	for _, n := range lost {
		prev := claimed[n]
		mg.warnf(hs.GatewayServer, "hosts", "SNI name %s on port %d is already served by %s %s; left out of this server", n, hs.Server.GetPort().GetNumber(), prev.Gateway, prev.Field(""))
	}
	for _, n := range kept {
		claimed[n] = hs.GatewayServer
	}
	hs.ServerNames = kept
	return true
}

// SecretStore gives the certificate chain and private key (PEM) held by a
// Kubernetes Secret. ok is false when the Secret does not exist or holds
// no certificate. Implementations must be safe for concurrent use.
type SecretStore interface {
	Secret(namespace, name string) (cert, key []byte, ok bool)
}

// SecretStoreFunc adapts a function to SecretStore.
type SecretStoreFunc func(namespace, name string) (cert, key []byte, ok bool)

// Secret calls f.
func (f SecretStoreFunc) Secret(namespace, name string) (cert, key []byte, ok bool) {
	return f(namespace, name)
}

// TLSKeyPair picks the certificate and key out of a Secret's data: the
// kubernetes.io/tls keys tls.crt and tls.key, or the cert and key keys of
// Istio's generic form. ok is false when either is missing or empty.
func TLSKeyPair(data map[string][]byte) (cert, key []byte, ok bool) {
	if c, k := data["tls.crt"], data["tls.key"]; len(c) > 0 && len(k) > 0 {
		return c, k, true
	}
	if c, k := data["cert"], data["key"]; len(c) > 0 && len(k) > 0 {
		return c, k, true
	}
	return nil, nil, false
}
