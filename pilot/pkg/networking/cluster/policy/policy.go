// Package policy resolves which DestinationRule traffic policy governs one
// cluster (host, port, subset), following Istio's precedence: the top-level
// trafficPolicy, replaced wholesale by a matching portLevelSettings entry,
// then overridden per component by the subset's trafficPolicy (itself
// replaced wholesale by the subset's matching portLevelSettings entry).
//
// The cluster, endpoint and route translators all read the result, so a
// cluster's type, its endpoints and its routes' hash policies always agree.
// Each component carries the field path it came from so errors can point at
// the exact place in the DestinationRule.
package policy

import (
	"fmt"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// Policy is the effective traffic policy for one cluster. Every field may be
// nil: nil means Istio's default. The *Field strings are the spec paths the
// components came from ("spec.subsets[0].trafficPolicy.loadBalancer").
type Policy struct {
	// Rule is the DestinationRule that applies, or nil.
	Rule *config.Config

	LoadBalancer      *networking.LoadBalancerSettings
	LoadBalancerField string

	ConnectionPool      *networking.ConnectionPoolSettings
	ConnectionPoolField string

	OutlierDetection      *networking.OutlierDetection
	OutlierDetectionField string

	TLS      *networking.ClientTLSSettings
	TLSField string
}

// Error builds a config error located at field of the policy's rule. It
// must only be called when Rule is set.
func (p *Policy) Error(field, format string, args ...any) *config.Error {
	return &config.Error{Source: p.Rule.Source, Key: p.Rule.Key(), Field: field, Message: fmt.Sprintf(format, args...)}
}

// IsPassthroughLB reports whether the policy asks for loadBalancer
// simple: PASSTHROUGH, which turns any cluster into an ORIGINAL_DST one.
func (p *Policy) IsPassthroughLB() bool {
	return p.LoadBalancer.GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH
}

// Subsets returns the subsets of host's DestinationRule, in rule order.
func Subsets(push *model.PushContext, host string) []*networking.Subset {
	dr := push.DestinationRuleForHost(host)
	if dr == nil {
		return nil
	}
	return dr.Spec.(*networking.DestinationRule).GetSubsets()
}

// For resolves the policy of the cluster for host, port and subset ("" for
// the service's default cluster). An unknown subset yields the top-level
// policy.
func For(push *model.PushContext, host string, port uint32, subset string) Policy {
	dr := push.DestinationRuleForHost(host)
	if dr == nil {
		return Policy{}
	}
	spec := dr.Spec.(*networking.DestinationRule)
	p := Policy{Rule: dr}
	p.apply(spec.GetTrafficPolicy(), "spec.trafficPolicy", port, false)
	if subset == "" {
		return p
	}
	for i, s := range spec.GetSubsets() {
		if s.GetName() == subset {
			p.apply(s.GetTrafficPolicy(), fmt.Sprintf("spec.subsets[%d].trafficPolicy", i), port, true)
			break
		}
	}
	return p
}

// apply layers tp, found at path, over p. A matching portLevelSettings entry
// replaces all four components, unset ones included: Istio documents that
// port-level settings do not inherit. Otherwise a subset's components
// override only where set, while the top-level policy sets everything.
func (p *Policy) apply(tp *networking.TrafficPolicy, path string, port uint32, subset bool) {
	if tp == nil {
		return
	}
	for i, pl := range tp.GetPortLevelSettings() {
		if pl.GetPort() != nil && pl.GetPort().GetNumber() == port {
			at := fmt.Sprintf("%s.portLevelSettings[%d]", path, i)
			p.LoadBalancer, p.LoadBalancerField = pl.GetLoadBalancer(), at+".loadBalancer"
			p.ConnectionPool, p.ConnectionPoolField = pl.GetConnectionPool(), at+".connectionPool"
			p.OutlierDetection, p.OutlierDetectionField = pl.GetOutlierDetection(), at+".outlierDetection"
			p.TLS, p.TLSField = pl.GetTls(), at+".tls"
			return
		}
	}
	if lb := tp.GetLoadBalancer(); lb != nil || !subset {
		p.LoadBalancer, p.LoadBalancerField = lb, path+".loadBalancer"
	}
	if cp := tp.GetConnectionPool(); cp != nil || !subset {
		p.ConnectionPool, p.ConnectionPoolField = cp, path+".connectionPool"
	}
	if od := tp.GetOutlierDetection(); od != nil || !subset {
		p.OutlierDetection, p.OutlierDetectionField = od, path+".outlierDetection"
	}
	if tls := tp.GetTls(); tls != nil || !subset {
		p.TLS, p.TLSField = tls, path+".tls"
	}
}

// IsEDS reports whether the cluster of svc governed by p receives its
// endpoints over EDS: services whose endpoints are known (ClientSideLB),
// unless the policy asks for PASSTHROUGH load balancing, which makes the
// cluster ORIGINAL_DST. The cluster and endpoint translators both ask this,
// so every EDS cluster has exactly one ClusterLoadAssignment.
func IsEDS(svc *model.Service, p *Policy) bool {
	return svc.Resolution == model.ClientSideLB && !p.IsPassthroughLB()
}
