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
	// ClientCA is the PEM bundle verifying client certificates that the
	// Gateway carries inline for the server's caCertCredentialName
	// (GatewayClientCAAnnotationPrefix); "" when none.
	ClientCA string
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
	// TLSPorts are the ports with TLS servers that do not carry HTTP
	// (passthrough, or TCP inside terminated TLS), ascending. A port may
	// also be in HTTPSPorts: its servers share one listener, told apart
	// by SNI.
	TLSPorts []uint32
	// TLSServers holds each TLS port's servers, in Gateway then server order.
	TLSServers map[uint32][]TLSServer
	// TCPPorts are the ports with a plain TCP server, ascending.
	TCPPorts []uint32
	// TCPServers holds each TCP port's one server.
	TCPServers map[uint32]GatewayServer
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
// port. As in Istio, a port serves one kind of traffic: plain HTTP
// (servers merged into one route configuration), plain TCP (one server), or
// TLS (HTTPS and TLS servers, each told apart by SNI). The first server on
// a port decides; servers of another kind are reported and skipped, and so
// is a TLS server naming a host an earlier server on its port has. Servers
// whose protocol or TLS mode is not served are reported and skipped.
func MergeGateways(gws []config.Config) *MergedGateway {
	mg := &MergedGateway{Gateways: gws, HTTPServers: map[uint32][]GatewayServer{}, HTTPSServers: map[uint32][]HTTPSServer{},
		TCPServers: map[uint32]GatewayServer{}, TLSServers: map[uint32][]TLSServer{}}
	// sni records, per TLS port, which server claimed each SNI name
	// ("" for the catch-all chain): Envoy rejects a listener with two
	// filter chains matching the same name.
	sni := map[uint32]map[string]GatewayServer{}
	routeNames := map[string]bool{}
	ports := map[uint32]portClaim{}
	for _, gw := range gws {
		for i, s := range gw.Spec.(*networking.Gateway).GetServers() {
			gs := GatewayServer{Server: s, Gateway: gw.Key(), Source: gw.Source, Index: i,
				ClientCA: clientCA(gw.Annotations, s.GetTls().GetCaCertCredentialName())}
			port := s.GetPort().GetNumber()
			kind, ok := mg.serverKind(gs)
			if !ok || !mg.claimPort(ports, gs, kind) {
				continue
			}
			switch kind {
			case kindHTTP:
				if _, ok := mg.HTTPServers[port]; !ok {
					mg.HTTPPorts = append(mg.HTTPPorts, port)
				}
				mg.HTTPServers[port] = append(mg.HTTPServers[port], gs)
			case kindTCP:
				mg.TCPPorts = append(mg.TCPPorts, port)
				mg.TCPServers[port] = gs
			case kindTLS:
				if isHTTPSTermination(s) {
					hs, ok := mg.httpsServer(gs)
					if !ok {
						continue
					}
					if routeNames[hs.RouteName] {
						mg.errorf(gs, "port.name", "route configuration %s is already used by another server; port names must be unique within a Gateway; server skipped", hs.RouteName)
						continue
					}
					if sni[port] == nil {
						sni[port] = map[string]GatewayServer{}
					}
					if !mg.claimServerNames(gs, hs.ServerNames, sni[port]) {
						continue
					}
					routeNames[hs.RouteName] = true
					if _, ok := mg.HTTPSServers[port]; !ok {
						mg.HTTPSPorts = append(mg.HTTPSPorts, port)
					}
					mg.HTTPSServers[port] = append(mg.HTTPSServers[port], hs)
					continue
				}
				ts, ok := mg.tlsServer(gs)
				if !ok {
					continue
				}
				if sni[port] == nil {
					sni[port] = map[string]GatewayServer{}
				}
				if !mg.claimServerNames(gs, ts.ServerNames, sni[port]) {
					continue
				}
				if _, ok := mg.TLSServers[port]; !ok {
					mg.TLSPorts = append(mg.TLSPorts, port)
				}
				mg.TLSServers[port] = append(mg.TLSServers[port], ts)
			}
		}
	}
	slices.Sort(mg.HTTPPorts)
	slices.Sort(mg.HTTPSPorts)
	slices.Sort(mg.TCPPorts)
	slices.Sort(mg.TLSPorts)
	return mg
}

func (mg *MergedGateway) errorf(s GatewayServer, field, format string, args ...any) {
	mg.Errors = append(mg.Errors, &config.Error{Source: s.Source, Key: s.Gateway, Field: s.Field(field), Message: fmt.Sprintf(format, args...)})
}

// httpsServer checks an HTTPS server that terminates TLS (SIMPLE, MUTUAL
// or OPTIONAL_MUTUAL), with the certificate from a Secret or from files.
func (mg *MergedGateway) httpsServer(gs GatewayServer) (HTTPSServer, bool) {
	hs := HTTPSServer{GatewayServer: gs, RouteName: HTTPSRouteName(gs.Server.GetPort().GetNumber(), gs.Server.GetPort().GetName(), gs.Gateway)}
	var ok bool
	hs.Credential, ok = mg.termination(gs)
	if !ok {
		return HTTPSServer{}, false
	}
	hs.ServerNames, ok = mg.serverNames(gs)
	if !ok {
		return HTTPSServer{}, false
	}
	return hs, true
}

// claimServerNames records the SNI names (nil: any) of a TLS server on
// its port. As in Istio, a server naming a host that an earlier server on
// the port has is skipped whole: Envoy rejects a listener whose filter
// chains match the same name, and keeping part of a server would serve
// its hosts with another server's certificate or routes.
func (mg *MergedGateway) claimServerNames(gs GatewayServer, names []string, claimed map[string]GatewayServer) bool {
	port := gs.Server.GetPort().GetNumber()
	if len(names) == 0 {
		if prev, ok := claimed[""]; ok {
			mg.errorf(gs, "hosts", "host * on port %d is already served by %s %s; server skipped", port, prev.Gateway, prev.Field(""))
			return false
		}
		claimed[""] = gs
		return true
	}
	for _, n := range names {
		if prev, ok := claimed[n]; ok {
			mg.errorf(gs, "hosts", "host %s on port %d is already served by %s %s; a host is served by one server per port; server skipped", n, port, prev.Gateway, prev.Field(""))
			return false
		}
	}
	for _, n := range names {
		claimed[n] = gs
	}
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
