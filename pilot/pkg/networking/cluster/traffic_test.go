package cluster

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

const backend = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: backend, namespace: default}
spec:
  hosts: [backend.example.com]
  ports:
  - {number: 80, name: http, protocol: HTTP}
  - {number: 8080, name: http-alt, protocol: HTTP}
  resolution: STATIC
  endpoints:
  - {address: 10.0.0.1, labels: {version: v1}}
  - {address: 10.0.0.2, labels: {version: v2}}
`

func TestLoadBalancerSimple(t *testing.T) {
	cases := []struct {
		simple string
		want   clusterv3.Cluster_LbPolicy
		typ    clusterv3.Cluster_DiscoveryType
	}{
		{"ROUND_ROBIN", clusterv3.Cluster_ROUND_ROBIN, clusterv3.Cluster_EDS},
		{"LEAST_REQUEST", clusterv3.Cluster_LEAST_REQUEST, clusterv3.Cluster_EDS},
		{"LEAST_CONN", clusterv3.Cluster_LEAST_REQUEST, clusterv3.Cluster_EDS},
		{"RANDOM", clusterv3.Cluster_RANDOM, clusterv3.Cluster_EDS},
		{"UNSPECIFIED", clusterv3.Cluster_LEAST_REQUEST, clusterv3.Cluster_EDS},
		{"PASSTHROUGH", clusterv3.Cluster_CLUSTER_PROVIDED, clusterv3.Cluster_ORIGINAL_DST},
	}
	for _, c := range cases {
		t.Run(c.simple, func(t *testing.T) {
			cs, errs := build(t, join(backend, dr("r", "backend.example.com", "  trafficPolicy: {loadBalancer: {simple: "+c.simple+"}}")))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			got := get(t, cs, "outbound|80||backend.example.com")
			if got.GetLbPolicy() != c.want || got.GetType() != c.typ {
				t.Errorf("lb %v type %v, want %v %v", got.GetLbPolicy(), got.GetType(), c.want, c.typ)
			}
			if c.typ == clusterv3.Cluster_ORIGINAL_DST && got.GetEdsClusterConfig() != nil {
				t.Error("PASSTHROUGH cluster still has an EDS config")
			}
		})
	}
}

func TestConsistentHash(t *testing.T) {
	cases := []struct {
		name     string
		hash     string
		lb       clusterv3.Cluster_LbPolicy
		ringSize uint64
		table    uint64
	}{
		{"ring hash with size", "{httpHeaderName: x-user, ringHash: {minimumRingSize: 2048}}", clusterv3.Cluster_RING_HASH, 2048, 0},
		{"ring hash default", "{httpHeaderName: x-user, ringHash: {}}", clusterv3.Cluster_RING_HASH, 0, 0},
		{"maglev", "{useSourceIp: true, maglev: {tableSize: 65537}}", clusterv3.Cluster_MAGLEV, 0, 65537},
		{"no algorithm", "{httpQueryParameterName: u}", clusterv3.Cluster_RING_HASH, 1024, 0},
		{"deprecated size", "{httpQueryParameterName: u, minimumRingSize: 100}", clusterv3.Cluster_RING_HASH, 100, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs, _ := build(t, join(backend, dr("r", "backend.example.com", "  trafficPolicy: {loadBalancer: {consistentHash: "+c.hash+"}}")))
			got := get(t, cs, "outbound|80||backend.example.com")
			if got.GetLbPolicy() != c.lb {
				t.Errorf("lb %v, want %v", got.GetLbPolicy(), c.lb)
			}
			if n := got.GetRingHashLbConfig().GetMinimumRingSize().GetValue(); n != c.ringSize {
				t.Errorf("minimum ring size %d, want %d", n, c.ringSize)
			}
			if n := got.GetMaglevLbConfig().GetTableSize().GetValue(); n != c.table {
				t.Errorf("maglev table size %d, want %d", n, c.table)
			}
		})
	}
}

func TestConnectionPool(t *testing.T) {
	cs, errs := build(t, join(backend, dr("r", "backend.example.com", `  trafficPolicy:
    connectionPool:
      tcp:
        maxConnections: 100
        connectTimeout: 0.25s
        maxConnectionDuration: 3600s
        tcpKeepalive: {probes: 3, time: 7200s, interval: 75s}
      http:
        http1MaxPendingRequests: 10
        http2MaxRequests: 1000
        maxRequestsPerConnection: 5
        maxRetries: 2
        idleTimeout: 30s
    portLevelSettings:
    - port: {number: 8080}
      connectionPool:
        tcp: {idleTimeout: 45s}
        http: {h2UpgradePolicy: UPGRADE, maxConcurrentStreams: 64}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy:
      connectionPool:
        http: {useClientProtocol: true, h2UpgradePolicy: UPGRADE}
`)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := get(t, cs, "outbound|80||backend.example.com")
	th := c.GetCircuitBreakers().GetThresholds()[0]
	if th.GetMaxConnections().GetValue() != 100 || th.GetMaxPendingRequests().GetValue() != 10 ||
		th.GetMaxRequests().GetValue() != 1000 || th.GetMaxRetries().GetValue() != 2 {
		t.Errorf("thresholds %v", th)
	}
	if c.GetConnectTimeout().AsDuration() != 250*time.Millisecond {
		t.Errorf("connect timeout %v", c.GetConnectTimeout().AsDuration())
	}
	ka := c.GetUpstreamConnectionOptions().GetTcpKeepalive()
	if ka.GetKeepaliveProbes().GetValue() != 3 || ka.GetKeepaliveTime().GetValue() != 7200 || ka.GetKeepaliveInterval().GetValue() != 75 {
		t.Errorf("keepalive %v", ka)
	}
	o := httpOpts(t, c)
	common := o.GetCommonHttpProtocolOptions()
	if common.GetIdleTimeout().AsDuration() != 30*time.Second || common.GetMaxRequestsPerConnection().GetValue() != 5 ||
		common.GetMaxConnectionDuration().AsDuration() != time.Hour {
		t.Errorf("common options %v", common)
	}
	if o.GetExplicitHttpConfig().GetHttpProtocolOptions() == nil {
		t.Errorf("HTTP/1.1 must be explicit when only common options are set: %v", o)
	}

	// Port 8080: port-level pool replaces the top-level one.
	p := get(t, cs, "outbound|8080||backend.example.com")
	if th := p.GetCircuitBreakers().GetThresholds()[0]; th.GetMaxConnections().GetValue() != 1<<32-1 {
		t.Errorf("port 8080 must not inherit maxConnections: %v", th)
	}
	if p.GetConnectTimeout().AsDuration() != 10*time.Second {
		t.Errorf("port 8080 connect timeout %v, want the 10s default", p.GetConnectTimeout().AsDuration())
	}
	po := httpOpts(t, p)
	if h2 := po.GetExplicitHttpConfig().GetHttp2ProtocolOptions(); h2 == nil || h2.GetMaxConcurrentStreams().GetValue() != 64 {
		t.Errorf("h2UpgradePolicy UPGRADE: %v", po)
	}
	if po.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration() != 45*time.Second {
		t.Errorf("tcp idleTimeout must apply when http has none: %v", po.GetCommonHttpProtocolOptions())
	}

	// useClientProtocol wins over an upgrade.
	s := httpOpts(t, get(t, cs, "outbound|80|v1|backend.example.com"))
	if s.GetUseDownstreamProtocolConfig() == nil {
		t.Errorf("useClientProtocol: %v", s)
	}
}

func TestOutlierDetection(t *testing.T) {
	cs, _ := build(t, join(backend, dr("r", "backend.example.com", `  trafficPolicy:
    outlierDetection:
      consecutive5xxErrors: 5
      consecutiveGatewayErrors: 0
      interval: 10s
      baseEjectionTime: 30s
      maxEjectionPercent: 50
      minHealthPercent: 25
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy:
      outlierDetection:
        splitExternalLocalOriginErrors: true
        consecutiveLocalOriginFailures: 4
`)))
	c := get(t, cs, "outbound|80||backend.example.com")
	od := c.GetOutlierDetection()
	if od.GetConsecutive_5Xx().GetValue() != 5 || od.GetEnforcingConsecutive_5Xx().GetValue() != 100 {
		t.Errorf("5xx: %v", od)
	}
	if od.GetConsecutiveGatewayFailure() == nil || od.GetConsecutiveGatewayFailure().GetValue() != 0 || od.GetEnforcingConsecutiveGatewayFailure().GetValue() != 0 {
		t.Errorf("a zero gateway error count must disable that detector: %v", od)
	}
	if od.GetEnforcingSuccessRate() == nil || od.GetEnforcingSuccessRate().GetValue() != 0 {
		t.Errorf("success rate ejection must be disabled: %v", od.GetEnforcingSuccessRate())
	}
	if od.GetInterval().AsDuration() != 10*time.Second || od.GetBaseEjectionTime().AsDuration() != 30*time.Second || od.GetMaxEjectionPercent().GetValue() != 50 {
		t.Errorf("timings: %v", od)
	}
	if v := c.GetCommonLbConfig().GetHealthyPanicThreshold(); v == nil || v.GetValue() != 25 {
		t.Errorf("panic threshold %v, want 25", v)
	}

	s := get(t, cs, "outbound|80|v1|backend.example.com")
	sod := s.GetOutlierDetection()
	if !sod.GetSplitExternalLocalOriginErrors() || sod.GetConsecutiveLocalOriginFailure().GetValue() != 4 || sod.GetConsecutive_5Xx() != nil {
		t.Errorf("subset outlier detection replaces the top-level one: %v", sod)
	}
	if v := s.GetCommonLbConfig().GetHealthyPanicThreshold(); v == nil || v.GetValue() != 0 {
		t.Errorf("unset minHealthPercent must disable the panic threshold (0), got %v", v)
	}
	if get(t, cs, "outbound|8080||backend.example.com").GetOutlierDetection() == nil {
		t.Error("port without port-level settings keeps the top-level detector")
	}
}

func TestSubsetClusters(t *testing.T) {
	cs, _ := build(t, join(backend, dr("r", "backend.example.com", `  trafficPolicy: {loadBalancer: {simple: RANDOM}}
  subsets:
  - name: v1
    labels: {version: v1}
  - name: v2
    labels: {version: v2}
    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
`)))
	if len(cs) != 6 {
		t.Errorf("%d clusters, want 6 (2 ports x (default + 2 subsets))", len(cs))
	}
	v1 := get(t, cs, "outbound|80|v1|backend.example.com")
	if v1.GetLbPolicy() != clusterv3.Cluster_RANDOM || v1.GetEdsClusterConfig().GetServiceName() != v1.Name {
		t.Errorf("v1: lb %v eds %v", v1.GetLbPolicy(), v1.GetEdsClusterConfig())
	}
	if v2 := get(t, cs, "outbound|8080|v2|backend.example.com"); v2.GetLbPolicy() != clusterv3.Cluster_ROUND_ROBIN {
		t.Errorf("v2 lb %v", v2.GetLbPolicy())
	}
}

func TestDNSSubsetFiltersEndpoints(t *testing.T) {
	cs, _ := build(t, join(se("dns", "dns.example.com", "DNS", "{address: a.example.com, labels: {v: a}}, {address: b.example.com, labels: {v: b}}"),
		dr("r", "dns.example.com", "  subsets:\n  - {name: a, labels: {v: a}}\n  - {name: none, labels: {v: x}}")))
	a := get(t, cs, "outbound|80|a|dns.example.com").GetLoadAssignment().GetEndpoints()
	if len(a) != 1 || len(a[0].GetLbEndpoints()) != 1 || addr(a[0].GetLbEndpoints()[0]) != "a.example.com:80" {
		t.Errorf("subset a endpoints %v", a)
	}
	none := get(t, cs, "outbound|80|none|dns.example.com")
	if none.GetType() != clusterv3.Cluster_STRICT_DNS || len(none.GetLoadAssignment().GetEndpoints()) != 0 {
		t.Errorf("subset selecting nothing: type %v endpoints %v", none.GetType(), none.GetLoadAssignment())
	}
}

func TestLogicalDNSKeepsOneEndpoint(t *testing.T) {
	cs, errs := build(t, join(se("rr", "rr.example.com", "DNS_ROUND_ROBIN", "{address: b.example.com}, {address: a.example.com}"),
		dr("r", "rr.example.com", "  subsets:\n  - {name: none, labels: {v: x}}")))
	c := get(t, cs, "outbound|80||rr.example.com")
	eps := c.GetLoadAssignment().GetEndpoints()
	if c.GetType() != clusterv3.Cluster_LOGICAL_DNS || len(eps) != 1 || len(eps[0].GetLbEndpoints()) != 1 || addr(eps[0].GetLbEndpoints()[0]) != "a.example.com:80" {
		t.Errorf("LOGICAL_DNS must keep exactly the first endpoint: %v", eps)
	}
	// Reported once, as a warning, though two ports are affected.
	if len(errs) != 1 || !errs[0].Warning || errs[0].Key.Name != "rr" || errs[0].Field != "spec.endpoints" {
		t.Fatalf("errors %v, want one warning on ServiceEntry rr", errs)
	}
	if none := get(t, cs, "outbound|80|none|rr.example.com"); none.GetType() != clusterv3.Cluster_STRICT_DNS || len(none.GetLoadAssignment().GetEndpoints()) != 0 {
		t.Errorf("LOGICAL_DNS subset without endpoints: %v %v", none.GetType(), none.GetLoadAssignment())
	}
}

func TestWildcardDNSWithoutEndpointsIsSkipped(t *testing.T) {
	cs, errs := build(t, join(se("wild", `"*.example.com"`, "DNS", ""), se("ok", "ok.example.com", "DNS", "")))
	if len(cs) != 2 || cs["outbound|80||ok.example.com"] == nil {
		t.Errorf("clusters %v, want only ok.example.com's", cs)
	}
	if len(errs) != 1 || errs[0].Key.Name != "wild" || errs[0].Field != "spec.hosts" {
		t.Errorf("errors %v", errs)
	}
}

func TestRejectedClusterIsReportedAndSkipped(t *testing.T) {
	// A zero connect timeout passes the Istio API but Envoy requires > 0.
	cs, errs := build(t, join(backend, se("other", "other.example.com", "STATIC", "{address: 10.0.0.9}"),
		dr("r", "backend.example.com", "  trafficPolicy: {connectionPool: {tcp: {connectTimeout: 0s}}}")))
	if _, ok := cs["outbound|80||backend.example.com"]; ok {
		t.Error("invalid cluster was built")
	}
	if cs["outbound|80||other.example.com"] == nil {
		t.Error("other services must still be built")
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one per invalid cluster", errs)
	}
	for _, e := range errs {
		if e.Key.Name != "r" || e.Source != "test.yaml (document 3)" || !strings.Contains(e.Message, "would be rejected by Envoy") {
			t.Errorf("error %v must blame DestinationRule r", e)
		}
	}
}
