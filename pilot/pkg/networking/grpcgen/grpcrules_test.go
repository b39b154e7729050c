package grpcgen

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protopath"
	"google.golang.org/protobuf/reflect/protorange"
)

// The checks below restate what gRPC-Go's xDS client (v1.85,
// internal/xds/xdsclient/xdsresource) rejects, so a golden that would be
// NACKed fails here and not only in the end-to-end tests.

type validator interface {
	proto.Message
	ValidateAll() error
}

// validateDeep runs ValidateAll on m and on every message packed in an Any
// inside it, which the generated validators do not look into.
func validateDeep(m validator) error {
	if err := m.ValidateAll(); err != nil {
		return err
	}
	return protorange.Range(m.ProtoReflect(), func(p protopath.Values) error {
		last := p.Index(-1)
		if last.Step.Kind() != protopath.AnyExpandStep {
			return nil
		}
		inner, ok := last.Value.Message().Interface().(validator)
		if !ok {
			return fmt.Errorf("%s: packed %s has no validator", p.Path[1:], last.Value.Message().Descriptor().FullName())
		}
		if err := inner.ValidateAll(); err != nil {
			return fmt.Errorf("%s: %w", p.Path[1:], err)
		}
		return nil
	})
}

func checkResources(t *testing.T, res Resources) {
	t.Helper()
	names := map[string]bool{}
	unique := func(kind, name string) {
		if names[kind+"/"+name] {
			t.Errorf("duplicate %s %q", kind, name)
		}
		names[kind+"/"+name] = true
	}
	for _, l := range res.Listeners {
		unique("listener", l.Name)
		if err := validateDeep(l); err != nil {
			t.Errorf("listener %s fails validation: %v", l.Name, err)
		}
		if err := grpcListener(l); err != nil {
			t.Errorf("gRPC would reject listener %s: %v", l.Name, err)
		}
	}
	for _, r := range res.Routes {
		unique("route", r.Name)
		if err := validateDeep(r); err != nil {
			t.Errorf("route %s fails validation: %v", r.Name, err)
		}
		if err := grpcRoutes(r); err != nil {
			t.Errorf("gRPC would reject route configuration %s: %v", r.Name, err)
		}
	}
	for _, c := range res.Clusters {
		unique("cluster", c.Name)
		if err := validateDeep(c); err != nil {
			t.Errorf("cluster %s fails validation: %v", c.Name, err)
		}
		if err := grpcCluster(c); err != nil {
			t.Errorf("gRPC would reject cluster %s: %v", c.Name, err)
		}
	}
	for _, e := range res.Endpoints {
		unique("endpoint", e.ClusterName)
		if err := validateDeep(e); err != nil {
			t.Errorf("endpoints %s fail validation: %v", e.ClusterName, err)
		}
		if err := grpcEndpoints(e); err != nil {
			t.Errorf("gRPC would reject endpoints %s: %v", e.ClusterName, err)
		}
	}
	// Every listener's route configuration and every EDS cluster's
	// assignment is there: gRPC would otherwise wait for them.
	for _, l := range res.Listeners {
		if !names["route/"+l.Name] {
			t.Errorf("listener %s has no route configuration", l.Name)
		}
	}
	eds := map[string]bool{}
	for _, c := range res.Clusters {
		if c.GetType() == clusterv3.Cluster_EDS && !names["endpoint/"+c.GetEdsClusterConfig().GetServiceName()] {
			t.Errorf("EDS cluster %s has no endpoints resource", c.Name)
		}
		eds[c.GetEdsClusterConfig().GetServiceName()] = c.GetType() == clusterv3.Cluster_EDS
	}
	// And no assignment is left without its cluster.
	for _, e := range res.Endpoints {
		if !eds[e.ClusterName] {
			t.Errorf("endpoints %s belong to no EDS cluster", e.ClusterName)
		}
	}
}

func grpcListener(l *listenerv3.Listener) error {
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		return fmt.Errorf("api_listener is not an HttpConnectionManager: %v", err)
	}
	if hcm.GetRds().GetConfigSource().GetAds() == nil || hcm.GetRds().GetRouteConfigName() == "" {
		return fmt.Errorf("route configuration must come over ADS with a name")
	}
	filters := hcm.GetHttpFilters()
	if len(filters) == 0 {
		return fmt.Errorf("no http filters")
	}
	seen := map[string]bool{}
	for i, f := range filters {
		if seen[f.GetName()] {
			return fmt.Errorf("duplicate filter %s", f.GetName())
		}
		seen[f.GetName()] = true
		isRouter := f.GetTypedConfig().MessageIs(&routerv3.Router{})
		if !isRouter && !f.GetTypedConfig().MessageIs(&faultv3.HTTPFault{}) {
			return fmt.Errorf("filter %s (%s) is unknown to gRPC", f.GetName(), f.GetTypedConfig().GetTypeUrl())
		}
		if isRouter != (i == len(filters)-1) {
			return fmt.Errorf("the router must be the last filter, and only it")
		}
	}
	return nil
}

func grpcRoutes(rc *routev3.RouteConfiguration) error {
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetMatch().GetPathSpecifier() == nil {
				return fmt.Errorf("route %q has no path specifier", r.GetName())
			}
			if len(r.GetMatch().GetQueryParameters()) > 0 {
				return fmt.Errorf("route %q matches query parameters; gRPC ignores it", r.GetName())
			}
			a := r.GetRoute()
			if a == nil {
				return fmt.Errorf("route %q does not forward; gRPC fails its RPCs", r.GetName())
			}
			if wc := a.GetWeightedClusters(); wc != nil {
				var total uint64
				for _, c := range wc.GetClusters() {
					total += uint64(c.GetWeight().GetValue())
				}
				if total == 0 || total > math.MaxUint32 {
					return fmt.Errorf("route %q: total weight %d", r.GetName(), total)
				}
			} else if a.GetCluster() == "" {
				return fmt.Errorf("route %q: no cluster", r.GetName())
			}
			if rp := a.GetRetryPolicy(); rp != nil {
				if rp.GetNumRetries() != nil && rp.GetNumRetries().GetValue() < 1 {
					return fmt.Errorf("route %q: num_retries < 1", r.GetName())
				}
				if b := rp.GetRetryBackOff(); b != nil && b.GetBaseInterval().AsDuration() <= 0 {
					return fmt.Errorf("route %q: backoff base interval not positive", r.GetName())
				}
			}
			for _, hp := range a.GetHashPolicy() {
				if hp.GetHeader() == nil {
					return fmt.Errorf("route %q: hash policy gRPC does not implement", r.GetName())
				}
			}
			for name, cfg := range r.GetTypedPerFilterConfig() {
				if !cfg.MessageIs(&faultv3.HTTPFault{}) {
					return fmt.Errorf("route %q: per-filter config %s of type %s", r.GetName(), name, cfg.GetTypeUrl())
				}
			}
		}
	}
	return nil
}

func grpcCluster(c *clusterv3.Cluster) error {
	switch c.GetLbPolicy() {
	case clusterv3.Cluster_ROUND_ROBIN, clusterv3.Cluster_LEAST_REQUEST:
	case clusterv3.Cluster_RING_HASH:
		if c.GetRingHashLbConfig().GetHashFunction() != clusterv3.Cluster_RingHashLbConfig_XX_HASH {
			return fmt.Errorf("ring hash function must be XX_HASH")
		}
	default:
		return fmt.Errorf("lb_policy %v", c.GetLbPolicy())
	}
	if c.GetLoadBalancingPolicy() != nil || c.GetTransportSocket() != nil || len(c.GetTransportSocketMatches()) > 0 || c.GetLrsServer() != nil {
		return fmt.Errorf("sets a field gRPC cannot honour")
	}
	switch c.GetType() {
	case clusterv3.Cluster_EDS:
		if c.GetEdsClusterConfig().GetEdsConfig().GetAds() == nil {
			return fmt.Errorf("EDS config source is not ADS")
		}
	case clusterv3.Cluster_LOGICAL_DNS:
		locs := c.GetLoadAssignment().GetEndpoints()
		if len(locs) != 1 || len(locs[0].GetLbEndpoints()) != 1 || locs[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetPortValue() == 0 {
			return fmt.Errorf("LOGICAL_DNS needs exactly one endpoint with a port")
		}
	default:
		return fmt.Errorf("cluster type %v", c.GetType())
	}
	if od := c.GetOutlierDetection(); od != nil {
		for _, v := range []uint32{od.GetMaxEjectionPercent().GetValue(), od.GetEnforcingSuccessRate().GetValue()} {
			if v > 100 {
				return fmt.Errorf("outlier detection percentage %d > 100", v)
			}
		}
	}
	return nil
}

func grpcEndpoints(cla *endpointv3.ClusterLoadAssignment) error {
	seen := map[string]bool{}
	var total uint64
	for _, l := range cla.GetEndpoints() {
		if l.GetLocality() == nil {
			return fmt.Errorf("locality without ID")
		}
		if l.GetLoadBalancingWeight().GetValue() == 0 {
			return fmt.Errorf("locality %v has no weight; gRPC drops it", l.GetLocality())
		}
		if l.GetPriority() != 0 {
			return fmt.Errorf("priority %d", l.GetPriority())
		}
		total += uint64(l.GetLoadBalancingWeight().GetValue())
		var sum uint64
		for _, ep := range l.GetLbEndpoints() {
			sa := ep.GetEndpoint().GetAddress().GetSocketAddress()
			if sa == nil {
				return fmt.Errorf("endpoint without socket address")
			}
			if w := ep.GetLoadBalancingWeight(); w != nil && w.GetValue() == 0 {
				return fmt.Errorf("endpoint with weight 0")
			}
			sum += uint64(max(ep.GetLoadBalancingWeight().GetValue(), 1))
			addr := sa.GetAddress() + ":" + strconv.FormatUint(uint64(sa.GetPortValue()), 10)
			if seen[addr] {
				return fmt.Errorf("duplicate endpoint %s", addr)
			}
			seen[addr] = true
		}
		if sum > math.MaxUint32 {
			return fmt.Errorf("endpoint weights overflow")
		}
	}
	if total > math.MaxUint32 {
		return fmt.Errorf("locality weights overflow")
	}
	return nil
}
