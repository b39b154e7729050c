package route

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// consistentHashFor finds the consistentHash load balancing that applies to
// traffic for host:port (subset subset), most specific first: the subset's
// port-level policy, the subset's policy, the rule's port-level policy,
// then the rule's own. A ring-hash or Maglev cluster only keeps requests
// sticky if the route says what to hash, which is why routes need it.
func consistentHashFor(push *model.PushContext, host string, port uint32, subset string) *networking.LoadBalancerSettings_ConsistentHashLB {
	dr := push.DestinationRuleForHost(host)
	if dr == nil {
		return nil
	}
	rule, ok := dr.Spec.(*networking.DestinationRule)
	if !ok {
		return nil
	}
	portHash := func(tp *networking.TrafficPolicy) *networking.LoadBalancerSettings_ConsistentHashLB {
		for _, pls := range tp.GetPortLevelSettings() {
			if pls.GetPort().GetNumber() == port {
				return pls.GetLoadBalancer().GetConsistentHash()
			}
		}
		return nil
	}
	if subset != "" {
		for _, s := range rule.GetSubsets() {
			if s.GetName() != subset {
				continue
			}
			if h := portHash(s.GetTrafficPolicy()); h != nil {
				return h
			}
			if h := s.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash(); h != nil {
				return h
			}
		}
	}
	if h := portHash(rule.GetTrafficPolicy()); h != nil {
		return h
	}
	return rule.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash()
}

// hashPolicy is the Envoy form of what a consistentHash hashes on, or nil.
func hashPolicy(h *networking.LoadBalancerSettings_ConsistentHashLB) *routev3.RouteAction_HashPolicy {
	switch k := h.GetHashKey().(type) {
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{
			Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: k.HttpHeaderName}}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie:
		c := &routev3.RouteAction_HashPolicy_Cookie{Name: k.HttpCookie.GetName(), Path: k.HttpCookie.GetPath(), Ttl: k.HttpCookie.GetTtl()}
		for _, a := range k.HttpCookie.GetAttributes() {
			c.Attributes = append(c.Attributes, &routev3.RouteAction_HashPolicy_CookieAttribute{Name: a.GetName(), Value: a.GetValue()})
		}
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: c}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{
			ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: k.UseSourceIp}}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{
			QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: k.HttpQueryParameterName}}}
	}
	return nil
}
