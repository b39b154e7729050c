package adsc

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// The type URLs the client subscribes to, in Envoy's initialization order.
const (
	ClusterType  = resource.ClusterType
	EndpointType = resource.EndpointType
	ListenerType = resource.ListenerType
	RouteType    = resource.RouteType
)

// typeOrder is Envoy's warming order; lists over types follow it.
var typeOrder = []string{ClusterType, EndpointType, ListenerType, RouteType}

// ShortName is the conventional short name of a type URL (CDS, EDS, LDS,
// RDS), or the URL itself for other types. Logs and errors use it.
func ShortName(typeURL string) string {
	switch typeURL {
	case ClusterType:
		return "CDS"
	case EndpointType:
		return "EDS"
	case ListenerType:
		return "LDS"
	case RouteType:
		return "RDS"
	}
	return typeURL
}

// State is an immutable snapshot of what the client has accepted. The client
// never modifies a State, its maps or the messages in them after publishing
// it, so any number of goroutines may read one; callers must not modify it
// either (proto.Clone a message to change it).
type State struct {
	// Clusters, Endpoints, Listeners and Routes are the last accepted
	// resources by name. Endpoints are keyed by cluster_name (the EDS service
	// name), Routes by route configuration name.
	Clusters  map[string]*clusterv3.Cluster
	Endpoints map[string]*endpointv3.ClusterLoadAssignment
	Listeners map[string]*listenerv3.Listener
	Routes    map[string]*routev3.RouteConfiguration
	// Types is the protocol state by type URL; a type has an entry once it
	// has been requested.
	Types map[string]TypeState
}

// TypeState is the protocol state of one type URL.
type TypeState struct {
	// Version and Nonce are those of the last ACKed response ("" before one).
	Version string
	Nonce   string
	// LastNonce is the nonce of the last response, ACKed or NACKed.
	LastNonce string
	// Wildcard is true for CDS and LDS; otherwise Subscribed lists the
	// resource names last requested, sorted.
	Wildcard   bool
	Subscribed []string
	// ACKs and NACKs count the responses accepted and rejected.
	ACKs  int
	NACKs int
	// Error is the reason of the last NACK while it is the latest response
	// of this type; an ACK clears it.
	Error string
}

// Version is the last accepted version of typeURL ("" before one).
func (s State) Version(typeURL string) string { return s.Types[typeURL].Version }

// Names returns the sorted names of the accepted resources of typeURL.
func (s State) Names(typeURL string) []string {
	switch typeURL {
	case ClusterType:
		return slices.Sorted(maps.Keys(s.Clusters))
	case EndpointType:
		return slices.Sorted(maps.Keys(s.Endpoints))
	case ListenerType:
		return slices.Sorted(maps.Keys(s.Listeners))
	case RouteType:
		return slices.Sorted(maps.Keys(s.Routes))
	}
	return nil
}

// emptyState is the state before any response.
func emptyState() *State {
	return &State{
		Clusters:  map[string]*clusterv3.Cluster{},
		Endpoints: map[string]*endpointv3.ClusterLoadAssignment{},
		Listeners: map[string]*listenerv3.Listener{},
		Routes:    map[string]*routev3.RouteConfiguration{},
		Types:     map[string]TypeState{},
	}
}

// withType returns a copy of s (sharing the resource maps, which are never
// modified) with typeURL's protocol state replaced.
func (s *State) withType(typeURL string, ts TypeState) *State {
	next := *s
	next.Types = maps.Clone(s.Types)
	ts.Subscribed = slices.Clone(ts.Subscribed)
	next.Types[typeURL] = ts
	return &next
}

// summary is a one-line description of the protocol state for errors.
func (s *State) summary() string {
	var b strings.Builder
	for i, t := range typeOrder {
		ts, ok := s.Types[t]
		if i > 0 {
			b.WriteString("; ")
		}
		if !ok {
			fmt.Fprintf(&b, "%s not requested", ShortName(t))
			continue
		}
		fmt.Fprintf(&b, "%s version=%q acks=%d nacks=%d names=%v", ShortName(t), ts.Version, ts.ACKs, ts.NACKs, s.Names(t))
		if ts.Error != "" {
			fmt.Fprintf(&b, " error=%q", ts.Error)
		}
	}
	return b.String()
}
