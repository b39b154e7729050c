package cluster

import (
	"math"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// HTTPProtocolOptionsKey is the typed_extension_protocol_options key Envoy
// reads upstream HTTP settings from.
const HTTPProtocolOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// defaultRingSize is Envoy's own default, which Istio spells out when the
// hash algorithm is not chosen.
const defaultRingSize = 1024

// IsHTTP2Protocol reports whether a service port protocol is spoken over
// HTTP/2 upstream (HTTP2, GRPC, GRPC-WEB).
func IsHTTP2Protocol(p string) bool {
	switch strings.ToUpper(p) {
	case "HTTP2", "GRPC", "GRPC-WEB":
		return true
	}
	return false
}

// httpOptions gathers the upstream HTTP settings several policy components
// contribute to, attached to the cluster once at the end.
type httpOptions struct {
	h2                bool
	useClientProtocol bool
	maxStreams        uint32
	common            *corev3.HttpProtocolOptions
	upstream          *corev3.UpstreamHttpProtocolOptions
}

func newHTTPOptions(port model.Port, pool *networking.ConnectionPoolSettings) *httpOptions {
	h := &httpOptions{h2: IsHTTP2Protocol(port.Protocol)}
	http := pool.GetHttp()
	switch {
	case http.GetUseClientProtocol():
		// The client's protocol wins over any upgrade.
		h.h2, h.useClientProtocol = false, true
	case http.GetH2UpgradePolicy() == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE:
		// An explicit upgrade means the user knows the port speaks HTTP.
		h.h2 = true
	}
	if n := http.GetMaxConcurrentStreams(); n > 0 {
		h.maxStreams = uint32(n)
	}
	return h
}

// attach stores the options in typed_extension_protocol_options when there
// is anything to say. Envoy requires an upstream protocol choice, so
// HTTP/1.1 is spelled out when HTTP/2 was not chosen.
func (h *httpOptions) attach(c *clusterv3.Cluster) error {
	if !h.h2 && !h.useClientProtocol && h.common == nil && h.upstream == nil {
		return nil
	}
	opts := &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: h.common, UpstreamHttpProtocolOptions: h.upstream}
	h2 := &corev3.Http2ProtocolOptions{}
	if h.maxStreams > 0 {
		h2.MaxConcurrentStreams = wrapperspb.UInt32(h.maxStreams)
	}
	switch {
	case h.useClientProtocol:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
			UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
				HttpProtocolOptions: &corev3.Http1ProtocolOptions{}, Http2ProtocolOptions: h2}}
	case h.h2:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: h2}}}
	default:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}}}}
	}
	if err := opts.ValidateAll(); err != nil {
		return err
	}
	a, err := anypb.New(opts)
	if err != nil {
		return err
	}
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{HTTPProtocolOptionsKey: a}
	return nil
}

// applyLoadBalancer sets lb_policy. Istio's default is LEAST_REQUEST;
// ORIGINAL_DST clusters must use CLUSTER_PROVIDED whatever was asked.
func applyLoadBalancer(c *clusterv3.Cluster, lb *networking.LoadBalancerSettings) {
	if c.GetType() == clusterv3.Cluster_ORIGINAL_DST {
		c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
		return
	}
	switch lb.GetSimple() {
	case networking.LoadBalancerSettings_ROUND_ROBIN:
		c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	case networking.LoadBalancerSettings_RANDOM:
		c.LbPolicy = clusterv3.Cluster_RANDOM
	default: // UNSPECIFIED, LEAST_REQUEST and the deprecated LEAST_CONN
		c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	}
	ch := lb.GetConsistentHash()
	switch {
	case ch == nil:
	case ch.GetMaglev() != nil:
		c.LbPolicy = clusterv3.Cluster_MAGLEV
		if size := ch.GetMaglev().GetTableSize(); size != 0 {
			c.LbConfig = &clusterv3.Cluster_MaglevLbConfig_{MaglevLbConfig: &clusterv3.Cluster_MaglevLbConfig{TableSize: wrapperspb.UInt64(size)}}
		}
	case ch.GetRingHash() != nil:
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		if size := ch.GetRingHash().GetMinimumRingSize(); size != 0 {
			c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(size)}}
		}
	default:
		// No algorithm chosen: ring hash with the deprecated top-level
		// minimumRingSize, or Envoy's default size.
		size := ch.GetMinimumRingSize() //nolint:staticcheck // still honoured, as Istio does
		if size == 0 {
			size = defaultRingSize
		}
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(size)}}
	}
}

// defaultThresholds are Istio's circuit breaker defaults: effectively
// unlimited, because Envoy's own (1024 connections, 3 retries) cause 503s
// under ordinary load and during endpoint churn.
func defaultThresholds() *clusterv3.CircuitBreakers_Thresholds {
	return &clusterv3.CircuitBreakers_Thresholds{
		MaxConnections:     wrapperspb.UInt32(math.MaxUint32),
		MaxPendingRequests: wrapperspb.UInt32(math.MaxUint32),
		MaxRequests:        wrapperspb.UInt32(math.MaxUint32),
		MaxRetries:         wrapperspb.UInt32(math.MaxUint32),
		TrackRemaining:     true,
	}
}

// applyConnectionPool sets circuit breakers (always: Istio's defaults
// unless overridden), the connect timeout, TCP keepalive and the common
// HTTP options. Zero means "not set" in Istio's API, so zeros are skipped.
func applyConnectionPool(c *clusterv3.Cluster, h *httpOptions, pool *networking.ConnectionPoolSettings) {
	t := defaultThresholds()
	tcp, http := pool.GetTcp(), pool.GetHttp()
	if n := tcp.GetMaxConnections(); n > 0 {
		t.MaxConnections = wrapperspb.UInt32(uint32(n))
	}
	if n := http.GetHttp1MaxPendingRequests(); n > 0 {
		t.MaxPendingRequests = wrapperspb.UInt32(uint32(n))
	}
	if n := http.GetHttp2MaxRequests(); n > 0 {
		t.MaxRequests = wrapperspb.UInt32(uint32(n))
	}
	if n := http.GetMaxRetries(); n > 0 {
		t.MaxRetries = wrapperspb.UInt32(uint32(n))
	}
	c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{t}}

	if d := tcp.GetConnectTimeout(); d != nil {
		c.ConnectTimeout = durationpb.New(d.AsDuration())
	}
	if ka := tcp.GetTcpKeepalive(); ka != nil {
		k := &corev3.TcpKeepalive{}
		if ka.GetProbes() > 0 {
			k.KeepaliveProbes = wrapperspb.UInt32(ka.GetProbes())
		}
		if ka.GetTime() != nil {
			k.KeepaliveTime = wrapperspb.UInt32(uint32(ka.GetTime().GetSeconds()))
		}
		if ka.GetInterval() != nil {
			k.KeepaliveInterval = wrapperspb.UInt32(uint32(ka.GetInterval().GetSeconds()))
		}
		c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: k}
	}

	idle := http.GetIdleTimeout()
	if idle == nil {
		idle = tcp.GetIdleTimeout()
	}
	common := &corev3.HttpProtocolOptions{}
	set := false
	if idle != nil {
		common.IdleTimeout, set = durationpb.New(idle.AsDuration()), true
	}
	if n := http.GetMaxRequestsPerConnection(); n > 0 {
		common.MaxRequestsPerConnection, set = wrapperspb.UInt32(uint32(n)), true
	}
	if d := tcp.GetMaxConnectionDuration(); d != nil {
		common.MaxConnectionDuration, set = durationpb.New(d.AsDuration()), true
	}
	if set {
		h.common = common
	}
}

// applyOutlierDetection maps Istio's outlierDetection. Success-rate
// ejection is always disabled, and the panic threshold is set from
// minHealthPercent even when 0 (Envoy's own default is 50%), as Istio does.
func applyOutlierDetection(c *clusterv3.Cluster, od *networking.OutlierDetection) {
	if od == nil {
		return
	}
	out := &clusterv3.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(0)}
	if e := od.GetConsecutive_5XxErrors(); e != nil {
		out.Consecutive_5Xx = wrapperspb.UInt32(e.GetValue())
		out.EnforcingConsecutive_5Xx = wrapperspb.UInt32(enforcing(e.GetValue()))
	}
	if e := od.GetConsecutiveGatewayErrors(); e != nil {
		out.ConsecutiveGatewayFailure = wrapperspb.UInt32(e.GetValue())
		out.EnforcingConsecutiveGatewayFailure = wrapperspb.UInt32(enforcing(e.GetValue()))
	}
	if d := od.GetInterval(); d != nil {
		out.Interval = durationpb.New(d.AsDuration())
	}
	if d := od.GetBaseEjectionTime(); d != nil {
		out.BaseEjectionTime = durationpb.New(d.AsDuration())
	}
	if n := od.GetMaxEjectionPercent(); n > 0 {
		out.MaxEjectionPercent = wrapperspb.UInt32(uint32(n))
	}
	if od.GetSplitExternalLocalOriginErrors() {
		out.SplitExternalLocalOriginErrors = true
		if n := od.GetConsecutiveLocalOriginFailures().GetValue(); n > 0 {
			out.ConsecutiveLocalOriginFailure = wrapperspb.UInt32(n)
			out.EnforcingConsecutiveLocalOriginFailure = wrapperspb.UInt32(100)
		}
		out.EnforcingLocalOriginSuccessRate = wrapperspb.UInt32(0)
	}
	c.OutlierDetection = out
	if n := od.GetMinHealthPercent(); n >= 0 {
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{Value: float64(n)}}
	}
}

// enforcing turns a consecutive-error count into an enforcement
// percentage: a count of 0 disables that detector, any other always ejects.
func enforcing(n uint32) uint32 {
	if n > 0 {
		return 100
	}
	return 0
}
