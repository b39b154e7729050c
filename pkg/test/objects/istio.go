package objects

import (
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// New is the object kind ns/name with spec.
func New(kind schema.Kind, ns, name string, spec proto.Message) config.Config {
	return config.Config{Meta: config.Meta{Kind: kind, Namespace: ns, Name: name}, Spec: spec}
}

// Gateway is a Gateway with one server holding hosts and no port: enough
// for stores, indexes and host matching, not for translation.
func Gateway(ns, name string, hosts ...string) config.Config {
	return GatewayServers(ns, name, &networking.Server{Hosts: hosts})
}

// GatewayServers is a Gateway with the given servers and no selector.
func GatewayServers(ns, name string, servers ...*networking.Server) config.Config {
	return New(schema.Gateway, ns, name, &networking.Gateway{Servers: servers})
}

// VirtualService is a VirtualService for hosts with no routes and no
// gateways.
func VirtualService(ns, name string, hosts ...string) config.Config {
	return New(schema.VirtualService, ns, name, &networking.VirtualService{Hosts: hosts})
}

// DestinationRule is a DestinationRule for host with the named subsets
// (no labels) and no traffic policy.
func DestinationRule(ns, name, host string, subsets ...string) config.Config {
	spec := &networking.DestinationRule{Host: host}
	for _, s := range subsets {
		spec.Subsets = append(spec.Subsets, &networking.Subset{Name: s})
	}
	return New(schema.DestinationRule, ns, name, spec)
}

// ServiceEntry is a STATIC ServiceEntry for host with one HTTP port named
// http and an endpoint per address.
func ServiceEntry(ns, name, host string, port uint32, addrs ...string) config.Config {
	se := &networking.ServiceEntry{Hosts: []string{host}, Resolution: networking.ServiceEntry_STATIC,
		Ports: []*networking.ServicePort{{Number: port, Protocol: "HTTP", Name: "http"}}}
	for _, a := range addrs {
		se.Endpoints = append(se.Endpoints, &networking.WorkloadEntry{Address: a})
	}
	return New(schema.ServiceEntry, ns, name, se)
}
