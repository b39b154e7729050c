package cluster

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
)

// HashPolicy returns the route hash policy that goes with a consistentHash
// load balancer on the cluster for host, subset ("" for none) and port, or
// nil when that cluster does not hash. Envoy hashes on the route but
// balances on the cluster, so a route to the cluster must carry this for
// RING_HASH or MAGLEV to be sticky. Port 0 means the service's only port.
func HashPolicy(push *model.PushContext, host, subset string, port uint32) []*routev3.RouteAction_HashPolicy {
	if port == 0 {
		if svc := push.ServiceForHost(host); svc != nil && len(svc.Ports) == 1 {
			port = svc.Ports[0].Number
		}
	}
	pol := policy.For(push, host, port, subset)
	ch := pol.LoadBalancer.GetConsistentHash()
	if ch == nil {
		return nil
	}
	var hp *routev3.RouteAction_HashPolicy
	switch {
	case ch.GetHttpHeaderName() != "":
		hp = &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{
			Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: ch.GetHttpHeaderName()}}}
	case ch.GetHttpCookie() != nil:
		ck := ch.GetHttpCookie()
		c := &routev3.RouteAction_HashPolicy_Cookie{Name: ck.GetName(), Path: ck.GetPath()}
		if ck.GetTtl() != nil {
			c.Ttl = durationpb.New(ck.GetTtl().AsDuration())
		}
		for _, a := range ck.GetAttributes() {
			c.Attributes = append(c.Attributes, &routev3.RouteAction_HashPolicy_CookieAttribute{Name: a.GetName(), Value: a.GetValue()})
		}
		hp = &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: c}}
	case ch.GetUseSourceIp():
		hp = &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{
			ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}}
	case ch.GetHttpQueryParameterName() != "":
		hp = &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{
			QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: ch.GetHttpQueryParameterName()}}}
	default:
		return nil
	}
	return []*routev3.RouteAction_HashPolicy{hp}
}
