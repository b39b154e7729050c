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

// MergedGateway is every server of the Gateways selecting one proxy,
// grouped by port. It is built once per distinct gateway configuration.
type MergedGateway struct {
	Gateways []config.Config
	// HTTPPorts are the ports with plain HTTP servers (HTTP, HTTP2, GRPC), ascending.
	HTTPPorts []uint32
	// HTTPServers holds each HTTP port's servers, in Gateway then server order.
	HTTPServers map[uint32][]GatewayServer
	// Errors are servers that could not be used.
	Errors []*config.Error
}

// ListenerName is Istio's gateway listener name, "0.0.0.0_80".
func ListenerName(port uint32) string { return "0.0.0.0_" + strconv.FormatUint(uint64(port), 10) }

// RouteName is Istio's gateway route configuration name, "http.80".
func RouteName(port uint32) string { return "http." + strconv.FormatUint(uint64(port), 10) }

// IsHTTPProtocol reports whether a gateway or service port protocol carries HTTP.
func IsHTTPProtocol(p string) bool {
	switch strings.ToUpper(p) {
	case "HTTP", "HTTP2", "GRPC", "GRPC-WEB":
		return true
	}
	return false
}

// MergeGateways groups the servers of gws (sorted by namespace and name) by
// port. Servers whose protocol is not served yet are reported and skipped.
func MergeGateways(gws []config.Config) *MergedGateway {
	mg := &MergedGateway{Gateways: gws, HTTPServers: map[uint32][]GatewayServer{}}
	for _, gw := range gws {
		for i, s := range gw.Spec.(*networking.Gateway).GetServers() {
			port := s.GetPort().GetNumber()
			field := fmt.Sprintf("spec.servers[%d].port.protocol", i)
			if !IsHTTPProtocol(s.GetPort().GetProtocol()) {
				mg.Errors = append(mg.Errors, &config.Error{Source: gw.Source, Key: gw.Key(), Field: field,
					Message: fmt.Sprintf("protocol %q is not served yet; only HTTP, HTTP2 and GRPC servers are; server skipped", s.GetPort().GetProtocol())})
				continue
			}
			if _, ok := mg.HTTPServers[port]; !ok {
				mg.HTTPPorts = append(mg.HTTPPorts, port)
			}
			mg.HTTPServers[port] = append(mg.HTTPServers[port], GatewayServer{Server: s, Gateway: gw.Key(), Source: gw.Source, Index: i})
		}
	}
	slices.Sort(mg.HTTPPorts)
	return mg
}
