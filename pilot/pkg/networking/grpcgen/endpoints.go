package grpcgen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// buildEndpoints makes the ClusterLoadAssignment of every EDS cluster,
// sorted by cluster name, shaped the way gRPC demands: every locality has
// an ID (possibly empty) and a positive load_balancing_weight (gRPC drops a
// locality without one), endpoints are IP:port (gRPC has no unix sockets
// over EDS) and no address appears twice (gRPC rejects the whole
// assignment). Each problem is reported and the offending endpoint left out.
func buildEndpoints(push *model.PushContext, r *reporter) []*endpointv3.ClusterLoadAssignment {
	var out []*endpointv3.ClusterLoadAssignment
	for _, svc := range push.Services() {
		if svc.Resolution != model.ClientSideLB || strings.HasPrefix(svc.Hostname, "*") {
			continue
		}
		names := []string{""}
		selectors := []map[string]string{nil}
		for _, s := range policy.Subsets(push, svc.Hostname) {
			names = append(names, s.GetName())
			selectors = append(selectors, s.GetLabels())
		}
		for _, port := range svc.Ports {
			for i, subset := range names {
				out = append(out, loadAssignment(svc, port, model.ClusterName(port.Number, subset, svc.Hostname), selectors[i], r))
			}
		}
	}
	slices.SortFunc(out, func(a, b *endpointv3.ClusterLoadAssignment) int { return strings.Compare(a.ClusterName, b.ClusterName) })
	return out
}

func loadAssignment(svc *model.Service, port model.Port, name string, selector map[string]string, r *reporter) *endpointv3.ClusterLoadAssignment {
	locs, bad := endpoint.LocalityEndpoints(svc.Endpoints, port, selector, false)
	for _, addr := range bad {
		r.add(&config.Error{Key: svc.Source, Field: "spec.endpoints",
			Message: fmt.Sprintf("endpoint address %q of host %s is not an IP address; endpoint skipped", addr, svc.Hostname)})
	}
	seen := map[string]bool{}
	var kept []*endpointv3.LocalityLbEndpoints
	for _, loc := range locs {
		var eps []*endpointv3.LbEndpoint
		var weight uint64
		for _, ep := range loc.GetLbEndpoints() {
			sa := ep.GetEndpoint().GetAddress().GetSocketAddress()
			if sa == nil {
				r.add(&config.Error{Key: svc.Source, Field: "spec.endpoints", Warning: true,
					Message: fmt.Sprintf("host %s: gRPC clients cannot reach unix socket endpoints; %s skipped for them", svc.Hostname, ep.GetEndpoint().GetAddress().GetPipe().GetPath())})
				continue
			}
			addr := sa.GetAddress() + ":" + strconv.FormatUint(uint64(sa.GetPortValue()), 10)
			if seen[addr] {
				r.add(&config.Error{Key: svc.Source, Field: "spec.endpoints", Warning: true,
					Message: fmt.Sprintf("host %s lists endpoint %s more than once; gRPC clients reject duplicates, so only the first is sent to them", svc.Hostname, addr)})
				continue
			}
			seen[addr] = true
			// Model endpoints carry no health: a listed endpoint is ready.
			ep.HealthStatus = corev3.HealthStatus_HEALTHY
			w := uint64(1)
			if ep.GetLoadBalancingWeight() != nil {
				w = uint64(ep.GetLoadBalancingWeight().GetValue())
			}
			weight += w
			eps = append(eps, ep)
		}
		if len(eps) == 0 {
			continue
		}
		if weight > math.MaxUint32 {
			r.add(&config.Error{Key: svc.Source, Field: "spec.endpoints",
				Message: fmt.Sprintf("host %s: endpoint weights in one locality add up to %d, over gRPC's limit of %d; endpoints of %s dropped", svc.Hostname, weight, uint64(math.MaxUint32), name)})
			return &endpointv3.ClusterLoadAssignment{ClusterName: name}
		}
		if loc.Locality == nil {
			loc.Locality = &corev3.Locality{}
		}
		loc.LbEndpoints = eps
		// Locality weight is the endpoints' total, so each endpoint gets
		// its share of traffic whatever locality it is in.
		loc.LoadBalancingWeight = wrapperspb.UInt32(uint32(weight))
		kept = append(kept, loc)
	}
	var total uint64
	for _, l := range kept {
		total += uint64(l.GetLoadBalancingWeight().GetValue())
	}
	if total > math.MaxUint32 {
		r.add(&config.Error{Key: svc.Source, Field: "spec.endpoints",
			Message: fmt.Sprintf("host %s: endpoint weights add up to %d, over gRPC's limit of %d; endpoints of %s dropped", svc.Hostname, total, uint64(math.MaxUint32), name)})
		return &endpointv3.ClusterLoadAssignment{ClusterName: name}
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: kept}
	if err := cla.ValidateAll(); err != nil {
		r.add(&config.Error{Key: svc.Source, Message: fmt.Sprintf("endpoints of cluster %s are invalid and were dropped: %v", name, err)})
		return &endpointv3.ClusterLoadAssignment{ClusterName: name}
	}
	return cla
}
