package envoyfilter

import (
	"fmt"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"
)

// vhostsField is RouteConfiguration.virtual_hosts.
var vhostsField = (&routev3.RouteConfiguration{}).ProtoReflect().Descriptor().Fields().ByName("virtual_hosts")

// stepVirtualHosts is step for a VIRTUAL_HOST (other than ADD) or
// HTTP_ROUTE patch, copying only what it can change: a gateway's route
// configuration holds every virtual host of the port, and a patch of one
// of them should not copy and validate all of them. The result shares
// the virtual hosts the patch does not match with cur; those it matches
// are copies, and only they are compared and validated. ok is false for
// other patches (step applies).
func (a *applier) stepVirtualHosts(p *patch, ref ResourceRef, cur *routev3.RouteConfiguration) (next *routev3.RouteConfiguration, ok bool) {
	if !(p.applyTo == networking.EnvoyFilter_HTTP_ROUTE ||
		(p.applyTo == networking.EnvoyFilter_VIRTUAL_HOST && p.operation != networking.EnvoyFilter_Patch_ADD)) {
		return nil, false
	}
	if a.in.Withhold[Withheld{Patch: p.ref, Resource: ref}] {
		p.report.Withheld = append(p.report.Withheld, ref)
		return cur, true
	}
	if !routeConfigurationMatch(cur, p, a.in.PortMap) {
		return cur, true
	}
	var idx []int
	for i, vh := range cur.GetVirtualHosts() {
		if virtualHostMatch(vh, p) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return cur, true
	}
	// A copy of cur sharing everything but the virtual host list, whose
	// matching hosts are copies.
	head := &routev3.RouteConfiguration{}
	cur.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != vhostsField {
			head.ProtoReflect().Set(fd, v)
		}
		return true
	})
	head.VirtualHosts = append([]*routev3.VirtualHost(nil), cur.VirtualHosts...)
	copies := map[*routev3.VirtualHost]*routev3.VirtualHost{}
	for _, i := range idx {
		c := proto.Clone(cur.VirtualHosts[i]).(*routev3.VirtualHost)
		copies[c] = cur.VirtualHosts[i]
		head.VirtualHosts[i] = c
	}
	matched, _, err := guarded(func() (bool, bool, error) { return patchRouteConfiguration(p, head, a.in.PortMap), false, nil })
	if !matched {
		return cur, true
	}
	p.report.Matched++
	changed := len(head.VirtualHosts) != len(cur.VirtualHosts)
	for i, vh := range head.VirtualHosts {
		orig, copied := copies[vh]
		if !copied {
			if i < len(cur.VirtualHosts) && vh != cur.VirtualHosts[i] {
				changed = true // replaced
			}
			if err == nil && vh != nil && (i >= len(cur.VirtualHosts) || vh != cur.VirtualHosts[i]) {
				err = validateAt(vh, fmt.Sprintf("virtual_hosts[%d]", i))
			}
			continue
		}
		if !proto.Equal(vh, orig) {
			changed = true
			if err == nil {
				err = validateAt(vh, fmt.Sprintf("virtual_hosts[%d]", i))
			}
		}
	}
	if err == nil && !changed {
		return cur, true
	}
	if err != nil {
		p.report.Failures = append(p.report.Failures, Failure{Resource: ref, Error: err.Error()})
		return cur, true
	}
	p.report.Changed++
	a.touched[ref] = append(a.touched[ref], p.ref)
	return head, true
}
