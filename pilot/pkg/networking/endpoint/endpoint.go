// Package endpoint translates service endpoints into Envoy
// ClusterLoadAssignments: one per EDS cluster (a ClientSideLB service's port,
// plus one per DestinationRule subset), endpoints grouped by locality.
//
// The same grouping builds the load_assignment of DNS clusters, which the
// cluster translator embeds, so both share LocalityEndpoints.
package endpoint

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// BuildEndpoints returns one ClusterLoadAssignment per EDS cluster, sorted by
// cluster name. Endpoints that Envoy cannot take over EDS (an address that is
// neither an IP nor a unix:// path) are skipped and reported once per
// service; everything else is still built.
func BuildEndpoints(push *model.PushContext) ([]*endpointv3.ClusterLoadAssignment, []*config.Error) {
	return buildEndpoints(push, nil)
}

// BuildEndpointsFor is BuildEndpoints for the services whose Source is in
// sources alone: what an endpoints-only push rebuilds when it knows which
// services changed. The others' assignments are not built.
func BuildEndpointsFor(push *model.PushContext, sources map[config.Key]struct{}) ([]*endpointv3.ClusterLoadAssignment, []*config.Error) {
	return buildEndpoints(push, func(svc *model.Service) bool {
		_, ok := sources[svc.Source]
		return ok
	})
}

func buildEndpoints(push *model.PushContext, include func(*model.Service) bool) ([]*endpointv3.ClusterLoadAssignment, []*config.Error) {
	var out []*endpointv3.ClusterLoadAssignment
	var errs []*config.Error
	for _, svc := range push.Services() {
		if svc.Resolution != model.ClientSideLB || (include != nil && !include(svc)) {
			continue
		}
		reported := map[string]bool{}
		for _, port := range svc.Ports {
			names := []string{""}
			selectors := []map[string]string{nil}
			for _, s := range policy.Subsets(push, svc.Hostname) {
				names = append(names, s.GetName())
				selectors = append(selectors, s.GetLabels())
			}
			for i, subset := range names {
				pol := policy.For(push, svc.Hostname, port.Number, subset)
				if !policy.IsEDS(svc, &pol) {
					continue
				}
				name := model.ClusterName(port.Number, subset, svc.Hostname)
				locs, bad := LocalityEndpoints(svc.Endpoints, port, selectors[i], false)
				for _, addr := range bad {
					if reported[addr] {
						continue
					}
					reported[addr] = true
					errs = append(errs, &config.Error{Key: svc.Source, Field: "spec.endpoints",
						Message: fmt.Sprintf("endpoint address %q of host %s is not an IP address or unix:// path, as resolution STATIC needs; endpoint skipped", addr, svc.Hostname)})
				}
				cla := &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: locs}
				if err := cla.ValidateAll(); err != nil {
					errs = append(errs, &config.Error{Key: svc.Source,
						Message: fmt.Sprintf("endpoints of cluster %s are invalid and were dropped: %v", name, err)})
					cla = &endpointv3.ClusterLoadAssignment{ClusterName: name}
				}
				out = append(out, cla)
			}
		}
	}
	slices.SortFunc(out, func(a, b *endpointv3.ClusterLoadAssignment) int { return strings.Compare(a.ClusterName, b.ClusterName) })
	return out, errs
}

// LocalityEndpoints turns the endpoints of eps that carry every label of
// selector into Envoy endpoints for service port port, grouped by locality
// ("region/zone/subzone"). Localities are sorted, and endpoints within each
// by address then port, so output does not depend on input order.
//
// With dns false (EDS) an address must be an IP or a unix:// path; others
// are left out and returned in bad. With dns true addresses are host names
// the proxy resolves, and anything goes.
func LocalityEndpoints(eps []*model.Endpoint, port model.Port, selector map[string]string, dns bool) (out []*endpointv3.LocalityLbEndpoints, bad []string) {
	byLocality := map[string]*endpointv3.LocalityLbEndpoints{}
	for _, ep := range eps {
		if !model.SubsetLabelsMatch(selector, ep.Labels) {
			continue
		}
		addr, ok := Address(ep.Address, ep.PortFor(port), dns)
		if !ok {
			bad = append(bad, ep.Address)
			continue
		}
		lb := &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr}}}
		if ep.Weight > 0 {
			lb.LoadBalancingWeight = wrapperspb.UInt32(ep.Weight)
		}
		loc := byLocality[ep.Locality]
		if loc == nil {
			loc = &endpointv3.LocalityLbEndpoints{Locality: Locality(ep.Locality)}
			byLocality[ep.Locality] = loc
			out = append(out, loc)
		}
		loc.LbEndpoints = append(loc.LbEndpoints, lb)
	}
	slices.SortFunc(out, func(a, b *endpointv3.LocalityLbEndpoints) int {
		return cmp.Or(strings.Compare(a.Locality.GetRegion(), b.Locality.GetRegion()),
			strings.Compare(a.Locality.GetZone(), b.Locality.GetZone()),
			strings.Compare(a.Locality.GetSubZone(), b.Locality.GetSubZone()))
	})
	for _, loc := range out {
		slices.SortStableFunc(loc.LbEndpoints, compareLbEndpoints)
	}
	return out, bad
}

func compareLbEndpoints(a, b *endpointv3.LbEndpoint) int {
	aa, ba := a.GetEndpoint().GetAddress(), b.GetEndpoint().GetAddress()
	return cmp.Or(
		strings.Compare(aa.GetPipe().GetPath(), ba.GetPipe().GetPath()),
		strings.Compare(aa.GetSocketAddress().GetAddress(), ba.GetSocketAddress().GetAddress()),
		cmp.Compare(aa.GetSocketAddress().GetPortValue(), ba.GetSocketAddress().GetPortValue()))
}

// Locality parses Istio's "region/zone/subzone" form; missing parts are
// empty and an empty string is the unnamed locality (nil).
func Locality(s string) *corev3.Locality {
	if s == "" {
		return nil
	}
	parts := strings.SplitN(s, "/", 3)
	loc := &corev3.Locality{Region: parts[0]}
	if len(parts) > 1 {
		loc.Zone = parts[1]
	}
	if len(parts) > 2 {
		loc.SubZone = parts[2]
	}
	return loc
}

// Address builds the Envoy address of an endpoint: a unix domain socket for
// "unix://PATH" (the port does not apply), else host:port. Unless dns is
// set, host must be an IP address.
func Address(host string, port uint32, dns bool) (*corev3.Address, bool) {
	if path, ok := strings.CutPrefix(host, "unix://"); ok {
		if path == "" {
			return nil, false
		}
		return &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: path}}}, true
	}
	if host == "" {
		return nil, false
	}
	if !dns {
		if _, err := netip.ParseAddr(host); err != nil {
			return nil, false
		}
	}
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}, true
}
