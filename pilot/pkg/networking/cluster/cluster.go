// Package cluster translates services and DestinationRules into Envoy
// clusters: one per service port ("outbound|PORT||HOST") plus one per
// DestinationRule subset ("outbound|PORT|SUBSET|HOST"), with the effective
// traffic policy (load balancing, connection pool, outlier detection,
// upstream TLS) applied the way Istio applies it.
//
// It also exports HashPolicy, the route-side half of consistent-hash load
// balancing, so routes and clusters read the same policy.
package cluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/endpoint"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

const (
	// DefaultConnectTimeout is Istio's mesh-wide default connect timeout.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultDNSRefreshRate is Istio's mesh-wide default dnsRefreshRate.
	DefaultDNSRefreshRate = 60 * time.Second
)

// BuildClusters returns every cluster of every service, sorted by name. A
// cluster that cannot be built correctly is reported and left out; the
// others are still built.
func BuildClusters(push *model.PushContext) ([]*clusterv3.Cluster, []*config.Error) {
	b := &builder{push: push, reported: map[string]bool{}}
	var out []*clusterv3.Cluster
	for _, svc := range push.Services() {
		if isDNS(svc) && strings.HasPrefix(svc.Hostname, "*") && len(svc.Endpoints) == 0 {
			// A wildcard cannot be resolved and there is nothing else to resolve.
			b.report(&config.Error{Key: svc.Source, Field: "spec.hosts",
				Message: fmt.Sprintf("host %s is a wildcard, which DNS resolution cannot resolve, and there are no endpoints; no cluster is built for it", svc.Hostname)})
			continue
		}
		subsets := policy.Subsets(push, svc.Hostname)
		for _, port := range svc.Ports {
			if c := b.build(svc, port, "", nil); c != nil {
				out = append(out, c)
			}
			for _, s := range subsets {
				if c := b.build(svc, port, s.GetName(), s.GetLabels()); c != nil {
					out = append(out, c)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *clusterv3.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out, b.errs
}

// builder collects errors; a DestinationRule that applies to many clusters
// reports each problem once.
type builder struct {
	push     *model.PushContext
	errs     []*config.Error
	reported map[string]bool
}

func (b *builder) report(e *config.Error) {
	if k := e.Error(); !b.reported[k] {
		b.reported[k] = true
		b.errs = append(b.errs, e)
	}
}

func isDNS(svc *model.Service) bool {
	return svc.Resolution == model.DNSLB || svc.Resolution == model.DNSRoundRobinLB
}

// build makes the cluster of svc's port for subset ("" for the default
// cluster) whose endpoints carry the selector's labels.
func (b *builder) build(svc *model.Service, port model.Port, subset string, selector map[string]string) *clusterv3.Cluster {
	pol := policy.For(b.push, svc.Hostname, port.Number, subset)
	name := model.ClusterName(port.Number, subset, svc.Hostname)
	c := &clusterv3.Cluster{Name: name, ConnectTimeout: durationpb.New(DefaultConnectTimeout)}
	switch {
	case policy.IsEDS(svc, &pol):
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
		c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsConfigSource(), ServiceName: name}
	case svc.Resolution == model.Passthrough || pol.IsPassthroughLB():
		// PASSTHROUGH load balancing overrides any resolution, as in Istio.
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
	default:
		b.applyDNS(c, svc, port, selector)
	}

	h := newHTTPOptions(port, pol.ConnectionPool)
	applyLoadBalancer(c, pol.LoadBalancer)
	applyConnectionPool(c, h, pol.ConnectionPool)
	applyOutlierDetection(c, pol.OutlierDetection)
	if e, drop := applyTLS(c, h, &pol, svc.Hostname, b.push.BackendClientCertificate()); e != nil {
		b.report(e)
		if drop {
			return nil
		}
	}
	if err := h.attach(c); err != nil {
		b.report(b.invalid(svc, &pol, name, err))
		return nil
	}
	if err := c.ValidateAll(); err != nil {
		b.report(b.invalid(svc, &pol, name, err))
		return nil
	}
	return c
}

// invalid blames the DestinationRule when one applies (its values are the
// likely cause), else the service.
func (b *builder) invalid(svc *model.Service, pol *policy.Policy, name string, err error) *config.Error {
	msg := fmt.Sprintf("cluster %s would be rejected by Envoy and is not built: %v", name, err)
	if pol.Rule != nil {
		return pol.Error("", "%s", msg)
	}
	return &config.Error{Key: svc.Source, Message: msg}
}

// applyDNS makes c a cluster whose endpoints the proxy resolves: STRICT_DNS
// (every address of every endpoint) for DNS, LOGICAL_DNS (one address at a
// time of one endpoint) for DNS_ROUND_ROBIN. A service without endpoints
// resolves its own host name.
func (b *builder) applyDNS(c *clusterv3.Cluster, svc *model.Service, port model.Port, selector map[string]string) {
	typ := clusterv3.Cluster_STRICT_DNS
	if svc.Resolution == model.DNSRoundRobinLB {
		typ = clusterv3.Cluster_LOGICAL_DNS
	}
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: typ}
	c.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
	c.DnsRefreshRate = durationpb.New(DefaultDNSRefreshRate)
	c.RespectDnsTtl = true

	eps := svc.Endpoints
	if len(eps) == 0 {
		eps = []*model.Endpoint{{Address: svc.Hostname}}
	}
	locs, _ := endpoint.LocalityEndpoints(eps, port, selector, true)
	if typ == clusterv3.Cluster_LOGICAL_DNS {
		locs = b.singleEndpoint(c, svc, locs)
	}
	c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.Name, Endpoints: locs}
}

// singleEndpoint keeps the first endpoint: Envoy refuses a LOGICAL_DNS
// cluster with more than one. With none (a subset selecting nothing) the
// cluster becomes an empty STRICT_DNS one, which Envoy accepts and which
// answers "no healthy upstream", rather than a cluster Envoy rejects.
func (b *builder) singleEndpoint(c *clusterv3.Cluster, svc *model.Service, locs []*endpointv3.LocalityLbEndpoints) []*endpointv3.LocalityLbEndpoints {
	n := 0
	for _, l := range locs {
		n += len(l.LbEndpoints)
	}
	switch {
	case n == 0:
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		return nil
	case n == 1:
		return locs
	}
	first := locs[0].LbEndpoints[0]
	b.report(&config.Error{Key: svc.Source, Field: "spec.endpoints", Warning: true,
		Message: fmt.Sprintf("resolution DNS_ROUND_ROBIN uses a single endpoint but host %s has %d; only %s is used",
			svc.Hostname, n, first.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())})
	return []*endpointv3.LocalityLbEndpoints{{Locality: locs[0].Locality, LbEndpoints: []*endpointv3.LbEndpoint{first}}}
}

// adsConfigSource is how every dynamic resource is fetched: over the ADS
// stream, without Envoy's initial fetch timeout (0 disables it) so a slow
// first push never leaves a cluster half-initialised.
func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		InitialFetchTimeout:   durationpb.New(0),
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}
