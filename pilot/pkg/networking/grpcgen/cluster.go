package grpcgen

import (
	"fmt"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// maxRingSize is the largest ring Envoy's API (and gRPC) allows.
const maxRingSize = 8 * 1024 * 1024

// buildClusters makes a cluster for every port of every service and every
// subset of its DestinationRule, sorted by name. Services with known
// endpoints get EDS clusters; DNS services get LOGICAL_DNS clusters (the one
// DNS type gRPC resolves). Services without either (resolution NONE,
// wildcard hosts) cannot be dialed by a gRPC client and get none.
func buildClusters(push *model.PushContext, r *reporter) []*clusterv3.Cluster {
	var out []*clusterv3.Cluster
	for _, svc := range push.Services() {
		if strings.HasPrefix(svc.Hostname, "*") {
			continue
		}
		if svc.Resolution == model.Passthrough {
			r.add(&config.Error{Key: svc.Source, Field: "spec.resolution", Warning: true,
				Message: fmt.Sprintf("host %s: resolution NONE sends traffic to the address the client dialed, which gRPC clients cannot do; no cluster for gRPC clients", svc.Hostname)})
			continue
		}
		subsets := policy.Subsets(push, svc.Hostname)
		for _, port := range svc.Ports {
			if c := buildCluster(push, svc, port, "", nil, r); c != nil {
				out = append(out, c)
			}
			for _, s := range subsets {
				if c := buildCluster(push, svc, port, s.GetName(), s.GetLabels(), r); c != nil {
					out = append(out, c)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *clusterv3.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func buildCluster(push *model.PushContext, svc *model.Service, port model.Port, subset string, selector map[string]string, r *reporter) *clusterv3.Cluster {
	pol := policy.For(push, svc.Hostname, port.Number, subset)
	name := model.ClusterName(port.Number, subset, svc.Hostname)
	c := &clusterv3.Cluster{Name: name}
	if svc.Resolution == model.ClientSideLB {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
		c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource(), ServiceName: name}
	} else if !logicalDNS(c, svc, port, selector, r) {
		return nil
	}
	if !applyTLS(&pol, name, r) {
		return nil
	}
	applyLoadBalancer(c, &pol, r)
	applyConnectionPool(c, &pol, r)
	applyOutlierDetection(c, &pol, r)
	if err := c.ValidateAll(); err != nil {
		e := &config.Error{Key: svc.Source, Message: fmt.Sprintf("cluster %s is invalid and was not built: %v", name, err)}
		if pol.Rule != nil {
			e = pol.Error("", "cluster %s is invalid and was not built: %v", name, err)
		}
		r.add(e)
		return nil
	}
	return c
}

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// logicalDNS makes c a LOGICAL_DNS cluster, which gRPC accepts only with
// exactly one endpoint: the first one the selector picks, or the host
// itself when the service lists none.
func logicalDNS(c *clusterv3.Cluster, svc *model.Service, port model.Port, selector map[string]string, r *reporter) bool {
	eps := svc.Endpoints
	if len(eps) == 0 {
		eps = []*model.Endpoint{{Address: svc.Hostname}}
	}
	locs, _ := endpoint.LocalityEndpoints(eps, port, selector, true)
	var first *endpointv3.LbEndpoint
	n := 0
	for _, l := range locs {
		for _, ep := range l.GetLbEndpoints() {
			if ep.GetEndpoint().GetAddress().GetSocketAddress() == nil {
				continue
			}
			if first == nil {
				first = ep
			}
			n++
		}
	}
	if first == nil {
		// A subset selecting nothing: no cluster, so RPCs routed to it fail
		// as they would with an empty EDS cluster.
		return false
	}
	if n > 1 {
		r.add(&config.Error{Key: svc.Source, Field: "spec.endpoints", Warning: true,
			Message: fmt.Sprintf("gRPC clients resolve a single DNS name per cluster but host %s has %d endpoints; only %s is used",
				svc.Hostname, n, first.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())})
	}
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS}
	c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.Name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
		Locality:            &corev3.Locality{},
		LoadBalancingWeight: wrapperspb.UInt32(1),
		LbEndpoints:         []*endpointv3.LbEndpoint{{HostIdentifier: first.HostIdentifier}},
	}}}
	return true
}

// applyTLS refuses clusters whose rule asks for TLS: gRPC clients take
// certificates from certificate providers in their own bootstrap, which
// Istio's TLS settings cannot name. Sending the cluster without TLS would
// downgrade the connection, so it is left out and RPCs to it fail.
func applyTLS(pol *policy.Policy, name string, r *reporter) bool {
	if pol.TLS == nil || pol.TLS.GetMode() == networking.ClientTLSSettings_DISABLE {
		return true
	}
	r.add(pol.Error(pol.TLSField+".mode", "TLS mode %s is not supported for gRPC clients (they need certificate providers in their bootstrap); cluster %s is not sent to them", pol.TLS.GetMode(), name))
	return false
}

func warnPolicy(pol *policy.Policy, field, format string, args ...any) *config.Error {
	e := pol.Error(field, format, args...)
	e.Warning = true
	return e
}

// applyLoadBalancer sets lb_policy to one of the three gRPC implements.
// ROUND_ROBIN is the default (gRPC's own); policies gRPC lacks fall back to
// the nearest it has, with a warning.
func applyLoadBalancer(c *clusterv3.Cluster, pol *policy.Policy, r *reporter) {
	lb := pol.LoadBalancer
	f := pol.LoadBalancerField
	c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	switch lb.GetSimple() {
	case networking.LoadBalancerSettings_LEAST_REQUEST, networking.LoadBalancerSettings_LEAST_CONN:
		c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	case networking.LoadBalancerSettings_RANDOM, networking.LoadBalancerSettings_PASSTHROUGH:
		r.add(warnPolicy(pol, f+".simple", "%s is not supported by gRPC clients; they use ROUND_ROBIN", lb.GetSimple()))
	}
	if ch := lb.GetConsistentHash(); ch != nil {
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		size := ch.GetMinimumRingSize() //nolint:staticcheck // deprecated, still honoured
		switch {
		case ch.GetMaglev() != nil:
			r.add(warnPolicy(pol, f+".consistentHash.maglev", "Maglev is not supported by gRPC clients; they use a ring hash"))
		case ch.GetRingHash() != nil:
			size = ch.GetRingHash().GetMinimumRingSize()
		}
		if size > maxRingSize {
			r.add(warnPolicy(pol, f+".consistentHash", "minimum ring size %d is over the limit of %d; the default is used", size, maxRingSize))
			size = 0
		}
		if size != 0 {
			c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(size)}}
		}
	}
	if lb.GetLocalityLbSetting() != nil {
		r.add(warnPolicy(pol, f+".localityLbSetting", "locality load balancing settings are not supported by gRPC clients; ignored"))
	}
	if lb.GetWarmupDurationSecs() != nil || lb.GetWarmup() != nil {
		r.add(warnPolicy(pol, f+".warmup", "slow start is not supported by gRPC clients; ignored"))
	}
}

// applyConnectionPool keeps the one limit gRPC enforces: concurrent
// requests per cluster (http2MaxRequests, as circuit breaker max_requests).
func applyConnectionPool(c *clusterv3.Cluster, pol *policy.Policy, r *reporter) {
	cp := pol.ConnectionPool
	if cp == nil {
		return
	}
	if n := cp.GetHttp().GetHttp2MaxRequests(); n > 0 {
		c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(uint32(n))}}}
	}
	h := cp.GetHttp()
	if cp.GetTcp() != nil || h.GetHttp1MaxPendingRequests() != 0 || h.GetMaxRequestsPerConnection() != 0 || h.GetMaxRetries() != 0 ||
		h.GetIdleTimeout() != nil || h.GetMaxConcurrentStreams() != 0 || h.GetH2UpgradePolicy() != networking.ConnectionPoolSettings_HTTPSettings_DEFAULT || h.GetUseClientProtocol() {
		r.add(warnPolicy(pol, pol.ConnectionPoolField, "gRPC clients apply only http.http2MaxRequests of a connection pool; the other settings are ignored"))
	}
}

// applyOutlierDetection sends what gRPC's outlier detection reads: the
// interval, ejection times and maximum share. gRPC ejects by success rate
// or failure percentage only; Istio exposes neither, and success-rate
// ejection is disabled as Istio disables it, so consecutive-error counts
// are sent for Envoy's sake but eject nothing in gRPC, which is reported.
func applyOutlierDetection(c *clusterv3.Cluster, pol *policy.Policy, r *reporter) {
	od := pol.OutlierDetection
	if od == nil {
		return
	}
	f := pol.OutlierDetectionField
	out := &clusterv3.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(0)}
	n := od.GetConsecutive_5XxErrors()
	if n == nil && od.GetConsecutiveErrors() != 0 { //nolint:staticcheck // deprecated, still honoured
		n = wrapperspb.UInt32(uint32(od.GetConsecutiveErrors())) //nolint:staticcheck
	}
	if n != nil {
		out.Consecutive_5Xx = wrapperspb.UInt32(n.GetValue())
		enforce := uint32(0)
		if n.GetValue() > 0 {
			enforce = 100
		}
		out.EnforcingConsecutive_5Xx = wrapperspb.UInt32(enforce)
		if n.GetValue() > 0 {
			r.add(warnPolicy(pol, f+".consecutive5xxErrors", "gRPC clients eject only by success rate or failure percentage; consecutive errors eject nothing"))
		}
	}
	if od.GetConsecutiveGatewayErrors() != nil || od.GetSplitExternalLocalOriginErrors() || od.GetConsecutiveLocalOriginFailures() != nil || od.GetMinHealthPercent() != 0 {
		r.add(warnPolicy(pol, f, "consecutiveGatewayErrors, local-origin errors and minHealthPercent are not supported by gRPC clients; ignored"))
	}
	if d := od.GetInterval(); d != nil {
		out.Interval = durationOf(d.AsDuration())
	}
	if d := od.GetBaseEjectionTime(); d != nil {
		out.BaseEjectionTime = durationOf(d.AsDuration())
	}
	if p := od.GetMaxEjectionPercent(); p > 0 {
		if p > 100 {
			r.add(pol.Error(f+".maxEjectionPercent", "%d is over 100; left out", p))
		} else {
			out.MaxEjectionPercent = wrapperspb.UInt32(uint32(p))
		}
	}
	c.OutlierDetection = out
}
