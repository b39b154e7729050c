package adsc

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

var (
	hcmTypeURL      = "type.googleapis.com/" + string((&hcmv3.HttpConnectionManager{}).ProtoReflect().Descriptor().FullName())
	resourceTypeURL = "type.googleapis.com/" + string((&discoveryv3.Resource{}).ProtoReflect().Descriptor().FullName())
)

// decoded holds one response's resources, typed, keyed by name. Only the map
// of the response's type is set.
type decoded struct {
	names     []string // sorted
	clusters  map[string]*clusterv3.Cluster
	endpoints map[string]*endpointv3.ClusterLoadAssignment
	listeners map[string]*listenerv3.Listener
	routes    map[string]*routev3.RouteConfiguration
}

// decode unpacks and checks a response the way Envoy does before accepting
// it: every resource must be of the response's type, decode, have a unique
// non-empty name and (unless validate is false) pass its proto validation;
// listeners' HTTP connection managers must decode and validate too. All
// problems are reported, each naming the resource.
func decode(typeURL string, resources []*anypb.Any, validate bool) (*decoded, error) {
	d := &decoded{}
	var err error
	switch typeURL {
	case ClusterType:
		d.clusters, err = decodeAll(typeURL, resources, validate, (*clusterv3.Cluster).GetName, nil)
		d.names = slices.Sorted(maps.Keys(d.clusters))
	case EndpointType:
		d.endpoints, err = decodeAll(typeURL, resources, validate, (*endpointv3.ClusterLoadAssignment).GetClusterName, nil)
		d.names = slices.Sorted(maps.Keys(d.endpoints))
	case ListenerType:
		d.listeners, err = decodeAll(typeURL, resources, validate, (*listenerv3.Listener).GetName, func(l *listenerv3.Listener) error {
			_, err := listenerRouteNames(l, validate)
			return err
		})
		d.names = slices.Sorted(maps.Keys(d.listeners))
	case RouteType:
		d.routes, err = decodeAll(typeURL, resources, validate, (*routev3.RouteConfiguration).GetName, nil)
		d.names = slices.Sorted(maps.Keys(d.routes))
	default:
		return nil, fmt.Errorf("type %s is not supported", typeURL)
	}
	return d, err
}

// decodeAll decodes resources of one type into a map by name. check, when
// set, runs on each decoded resource after validation.
func decodeAll[M interface {
	proto.Message
	ValidateAll() error
}](typeURL string, resources []*anypb.Any, validate bool, name func(M) string, check func(M) error) (map[string]M, error) {
	out := make(map[string]M, len(resources))
	var errs []error
	for i, a := range resources {
		msg, err := unpack[M](typeURL, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s resource %d: %w", ShortName(typeURL), i, err))
			continue
		}
		n := name(msg)
		if n == "" {
			errs = append(errs, fmt.Errorf("%s resource %d: name is empty", ShortName(typeURL), i))
			continue
		}
		if _, dup := out[n]; dup {
			errs = append(errs, fmt.Errorf("%s resource %q: duplicate name in the response", ShortName(typeURL), n))
			continue
		}
		if validate {
			if err := msg.ValidateAll(); err != nil {
				errs = append(errs, fmt.Errorf("%s resource %q: %w", ShortName(typeURL), n, err))
				continue
			}
		}
		if check != nil {
			if err := check(msg); err != nil {
				errs = append(errs, fmt.Errorf("%s resource %q: %w", ShortName(typeURL), n, err))
				continue
			}
		}
		out[n] = msg
	}
	return out, errors.Join(errs...)
}

// unpack decodes one Any of the expected type, also inside the
// discovery.v3.Resource wrapper that servers use for TTLs.
func unpack[M proto.Message](typeURL string, a *anypb.Any) (M, error) {
	var zero M
	if a.GetTypeUrl() == resourceTypeURL {
		wrapper := &discoveryv3.Resource{}
		if err := a.UnmarshalTo(wrapper); err != nil {
			return zero, fmt.Errorf("decode Resource wrapper: %w", err)
		}
		if wrapper.GetResource() == nil {
			return zero, fmt.Errorf("Resource wrapper %q carries no resource", wrapper.GetName())
		}
		a = wrapper.GetResource()
	}
	if a.GetTypeUrl() != typeURL {
		return zero, fmt.Errorf("type %q does not match the response's type", a.GetTypeUrl())
	}
	msg := zero.ProtoReflect().New().Interface().(M)
	if err := a.UnmarshalTo(msg); err != nil {
		return zero, fmt.Errorf("decode: %w", err)
	}
	return msg, nil
}

// edsServiceName is the name a cluster's endpoints are requested by, or ""
// for a cluster that is not of type EDS.
func edsServiceName(c *clusterv3.Cluster) string {
	if c.GetType() != clusterv3.Cluster_EDS {
		return ""
	}
	if n := c.GetEdsClusterConfig().GetServiceName(); n != "" {
		return n
	}
	return c.GetName()
}

// edsNames is the sorted set of EDS names the clusters need.
func edsNames(clusters map[string]*clusterv3.Cluster) []string {
	set := map[string]struct{}{}
	for _, c := range clusters {
		if n := edsServiceName(c); n != "" {
			set[n] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// rdsNames is the sorted set of route configuration names the listeners'
// HTTP connection managers request over RDS. The listeners were checked when
// accepted, so decoding errors cannot occur here.
func rdsNames(listeners map[string]*listenerv3.Listener) []string {
	set := map[string]struct{}{}
	for _, l := range listeners {
		names, _ := listenerRouteNames(l, false)
		for _, n := range names {
			set[n] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// listenerRouteNames returns the RDS route configuration names of a
// listener's HTTP connection managers, in every filter chain and the default
// one. A connection manager that does not decode (or validate) is an error,
// as Envoy rejects such a listener.
func listenerRouteNames(l *listenerv3.Listener, validate bool) ([]string, error) {
	chains := slices.Clone(l.GetFilterChains())
	if dc := l.GetDefaultFilterChain(); dc != nil {
		chains = append(chains, dc)
	}
	var names []string
	for ci, fc := range chains {
		for fi, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if tc.GetTypeUrl() != hcmTypeURL {
				continue
			}
			hcm := &hcmv3.HttpConnectionManager{}
			if err := tc.UnmarshalTo(hcm); err != nil {
				return nil, fmt.Errorf("filter chain %d filter %d %q: decode HttpConnectionManager: %w", ci, fi, f.GetName(), err)
			}
			if validate {
				if err := hcm.ValidateAll(); err != nil {
					return nil, fmt.Errorf("filter chain %d filter %d %q: %w", ci, fi, f.GetName(), err)
				}
			}
			if n := hcm.GetRds().GetRouteConfigName(); n != "" {
				names = append(names, n)
			}
		}
	}
	return names, nil
}
