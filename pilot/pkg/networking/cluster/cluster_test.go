package cluster

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/nettest"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// pushFrom indexes YAML documents without validating them, so tests can
// feed the translator what validation would normally stop.
func pushFrom(t testing.TB, docs string) *model.PushContext {
	t.Helper()
	return nettest.PushFromYAML(t, docs)
}

// build runs BuildClusters, checks every cluster passes validation, and
// indexes them by name.
func build(t *testing.T, docs string) (map[string]*clusterv3.Cluster, []*config.Error) {
	t.Helper()
	cs, errs := BuildClusters(pushFrom(t, docs))
	out := map[string]*clusterv3.Cluster{}
	for i, c := range cs {
		if err := c.ValidateAll(); err != nil {
			t.Errorf("cluster %s fails validation: %v", c.Name, err)
		}
		if i > 0 && cs[i-1].Name >= c.Name {
			t.Errorf("clusters not sorted: %s before %s", cs[i-1].Name, c.Name)
		}
		out[c.Name] = c
	}
	return out, errs
}

func get(t *testing.T, cs map[string]*clusterv3.Cluster, name string) *clusterv3.Cluster {
	t.Helper()
	c := cs[name]
	if c == nil {
		names := make([]string, 0, len(cs))
		for n := range cs {
			names = append(names, n)
		}
		t.Fatalf("no cluster %s; have %v", name, names)
	}
	return c
}

func httpOpts(t *testing.T, c *clusterv3.Cluster) *httpv3.HttpProtocolOptions {
	t.Helper()
	a := c.GetTypedExtensionProtocolOptions()[HTTPProtocolOptionsKey]
	if a == nil {
		return nil
	}
	o := &httpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(o); err != nil {
		t.Fatal(err)
	}
	return o
}

func tlsContext(t *testing.T, c *clusterv3.Cluster) *tlsv3.UpstreamTlsContext {
	t.Helper()
	if c.GetTransportSocket() == nil {
		return nil
	}
	if c.GetTransportSocket().GetName() != "envoy.transport_sockets.tls" {
		t.Errorf("transport socket %q", c.GetTransportSocket().GetName())
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func se(name, hosts, resolution, endpoints string) string {
	return `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ` + name + `, namespace: default}
spec:
  hosts: [` + hosts + `]
  ports:
  - {number: 80, name: http, protocol: HTTP}
  - {number: 9090, name: grpc, protocol: GRPC, targetPort: 9000}
  resolution: ` + resolution + `
  endpoints: [` + endpoints + `]
`
}

func dr(name, host, body string) string {
	return `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: ` + name + `, namespace: default}
spec:
  host: ` + host + `
` + body
}

func join(docs ...string) string { return strings.Join(docs, "\n---\n") }

func TestDiscoveryTypeByResolution(t *testing.T) {
	cs, errs := build(t, join(
		se("static", "static.example.com", "STATIC", "{address: 10.0.0.1}"),
		se("dns", "dns.example.com", "DNS", "{address: b.example.com}, {address: a.example.com, ports: {http: 8080}}"),
		se("dnsrr", "rr.example.com", "DNS_ROUND_ROBIN", ""),
		se("none", "none.example.com", "NONE", ""),
	))
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(cs) != 8 {
		t.Errorf("got %d clusters, want 8 (4 services x 2 ports)", len(cs))
	}

	eds := get(t, cs, "outbound|80||static.example.com")
	if eds.GetType() != clusterv3.Cluster_EDS {
		t.Errorf("STATIC: type %v, want EDS", eds.GetType())
	}
	src := eds.GetEdsClusterConfig().GetEdsConfig()
	if eds.GetEdsClusterConfig().GetServiceName() != eds.Name || src.GetAds() == nil || src.GetResourceApiVersion().String() != "V3" {
		t.Errorf("STATIC: eds config %v", eds.GetEdsClusterConfig())
	}
	if eds.GetLoadAssignment() != nil {
		t.Error("EDS cluster must not embed endpoints")
	}
	if eds.GetConnectTimeout().AsDuration() != 10*time.Second || eds.GetLbPolicy() != clusterv3.Cluster_LEAST_REQUEST {
		t.Errorf("defaults: connect timeout %v lb %v", eds.GetConnectTimeout().AsDuration(), eds.GetLbPolicy())
	}
	th := eds.GetCircuitBreakers().GetThresholds()[0]
	if th.GetMaxConnections().GetValue() != math.MaxUint32 || th.GetMaxRetries().GetValue() != math.MaxUint32 || !th.GetTrackRemaining() {
		t.Errorf("default thresholds %v", th)
	}

	strict := get(t, cs, "outbound|80||dns.example.com")
	if strict.GetType() != clusterv3.Cluster_STRICT_DNS || strict.GetDnsLookupFamily() != clusterv3.Cluster_V4_ONLY ||
		!strict.GetRespectDnsTtl() || strict.GetDnsRefreshRate().AsDuration() != time.Minute {
		t.Errorf("DNS: %v family %v ttl %v refresh %v", strict.GetType(), strict.GetDnsLookupFamily(), strict.GetRespectDnsTtl(), strict.GetDnsRefreshRate())
	}
	eps := strict.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()
	if len(eps) != 2 || addr(eps[0]) != "a.example.com:8080" || addr(eps[1]) != "b.example.com:80" {
		t.Errorf("DNS endpoints %v, want a.example.com:8080 then b.example.com:80", eps)
	}
	if strict.GetLoadAssignment().GetClusterName() != strict.Name {
		t.Errorf("load assignment named %q", strict.GetLoadAssignment().GetClusterName())
	}

	logical := get(t, cs, "outbound|9090||rr.example.com")
	if logical.GetType() != clusterv3.Cluster_LOGICAL_DNS {
		t.Errorf("DNS_ROUND_ROBIN: type %v", logical.GetType())
	}
	// No endpoints: the host itself, on the target port.
	if eps := logical.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints(); len(eps) != 1 || addr(eps[0]) != "rr.example.com:9000" {
		t.Errorf("DNS_ROUND_ROBIN without endpoints: %v, want rr.example.com:9000", eps)
	}

	orig := get(t, cs, "outbound|80||none.example.com")
	if orig.GetType() != clusterv3.Cluster_ORIGINAL_DST || orig.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED || orig.GetLoadAssignment() != nil {
		t.Errorf("NONE: type %v lb %v", orig.GetType(), orig.GetLbPolicy())
	}

	grpc := httpOpts(t, get(t, cs, "outbound|9090||static.example.com"))
	if grpc.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
		t.Errorf("GRPC port must speak HTTP/2 upstream: %v", grpc)
	}
	if httpOpts(t, eds) != nil {
		t.Error("plain HTTP cluster without options must not carry protocol options")
	}
}

func addr(ep *endpointv3.LbEndpoint) string {
	sa := ep.GetEndpoint().GetAddress().GetSocketAddress()
	return sa.GetAddress() + ":" + strconv.FormatUint(uint64(sa.GetPortValue()), 10)
}
