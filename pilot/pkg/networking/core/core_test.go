package core

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/nettest"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// pushFrom indexes YAML documents without validating them, so tests can
// feed the translator what validation would normally stop.
func pushFrom(t testing.TB, docs string) *model.PushContext {
	t.Helper()
	return nettest.PushFromYAML(t, docs)
}

const gatewayDocs = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 8080, name: http-alt, protocol: HTTP}
    hosts: ["*"]
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: SIMPLE, credentialName: cert}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vs, namespace: default}
spec:
  hosts: [web.example.com]
  gateways: [istio-system/gw]
  http:
  - match: [{port: 80}]
    route: [{destination: {host: web.example.com, port: {number: 80}}}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: default}
spec:
  hosts: [web.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.1}]
`

func TestBuildGatewayPairsListenersAndRoutes(t *testing.T) {
	push := pushFrom(t, gatewayDocs)
	gr := BuildGateway(push, push.Gateways())
	if len(gr.Listeners) != 2 || gr.Listeners[0].Name != "0.0.0.0_80" || gr.Listeners[1].Name != "0.0.0.0_8080" {
		t.Fatalf("listeners %v", gr.Listeners)
	}
	// Every listener's RDS name has exactly one route configuration, even
	// the port no VirtualService matched.
	if len(gr.Routes) != 2 || gr.Routes[0].Name != "http.80" || gr.Routes[1].Name != "http.8080" {
		t.Fatalf("routes %v", gr.Routes)
	}
	if len(gr.Routes[0].GetVirtualHosts()) == 0 {
		t.Error("http.80 lost its virtual hosts")
	}
	// BuildGateway knows no Secrets: the HTTPS server is reported and
	// left out, listener and routes alike.
	if len(gr.Errors) == 0 || gr.Errors[0].Field != "spec.servers[2].tls.credentialName" {
		t.Errorf("errors %v, want the HTTPS server's missing secret reported first", gr.Errors)
	}
	if len(gr.Secrets) != 0 {
		t.Errorf("%d secrets, want none", len(gr.Secrets))
	}
}

func TestBuildGatewayWithoutGateways(t *testing.T) {
	gr := BuildGateway(pushFrom(t, gatewayDocs), nil)
	if len(gr.Listeners) != 0 || len(gr.Routes) != 0 || len(gr.Errors) != 0 {
		t.Errorf("no gateways: %d listeners, %d routes, %d errors", len(gr.Listeners), len(gr.Routes), len(gr.Errors))
	}
}

func TestBuildServicesKeepsOneAssignmentPerEDSCluster(t *testing.T) {
	push := pushFrom(t, gatewayDocs+`
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: bad, namespace: default}
spec:
  hosts: [bad.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.0.0.2}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bad, namespace: default}
spec:
  host: bad.example.com
  trafficPolicy: {connectionPool: {tcp: {connectTimeout: 0s}}}
`)
	sr := BuildServices(push)
	if len(sr.Clusters) != 1 || sr.Clusters[0].Name != "outbound|80||web.example.com" || sr.Clusters[0].GetType() != clusterv3.Cluster_EDS {
		t.Fatalf("clusters %v, want only web's (bad's is rejected)", sr.Clusters)
	}
	if len(sr.Endpoints) != 1 || sr.Endpoints[0].ClusterName != "outbound|80||web.example.com" {
		t.Errorf("endpoints %v: the rejected cluster's assignment must go too", sr.Endpoints)
	}
	if len(sr.Errors) != 1 || sr.Errors[0].Key.Name != "bad" {
		t.Errorf("errors %v", sr.Errors)
	}
}

// workload builds n services (STATIC, two ports, three endpoints, a
// DestinationRule with two subsets), one Gateway on port 80 for every
// host, and one VirtualService per service splitting between subsets.
func workload(n int) []config.Config {
	out := []config.Config{{
		Meta: config.Meta{Kind: schema.Gateway, Namespace: "istio-system", Name: "gw"},
		Spec: &networking.Gateway{
			Selector: map[string]string{"istio": "ingressgateway"},
			Servers:  []*networking.Server{{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*"}}},
		},
	}}
	for i := range n {
		name := "svc-" + itoa(i)
		host := name + ".bench.svc.cluster.local"
		var eps []*networking.WorkloadEntry
		for j := range 3 {
			eps = append(eps, &networking.WorkloadEntry{Address: "10." + itoa(i/250) + "." + itoa(i%250) + "." + itoa(j+1),
				Labels: map[string]string{"version": "v" + itoa(j%2+1)}, Locality: "region/zone-" + itoa(j)})
		}
		out = append(out,
			config.Config{Meta: config.Meta{Kind: schema.ServiceEntry, Namespace: "bench", Name: name}, Spec: &networking.ServiceEntry{
				Hosts: []string{host}, Resolution: networking.ServiceEntry_STATIC, Endpoints: eps,
				Ports: []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}, {Number: 9090, Name: "grpc", Protocol: "GRPC"}},
			}},
			config.Config{Meta: config.Meta{Kind: schema.DestinationRule, Namespace: "bench", Name: name}, Spec: &networking.DestinationRule{
				Host: host,
				TrafficPolicy: &networking.TrafficPolicy{
					ConnectionPool:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100}},
					OutlierDetection: &networking.OutlierDetection{MaxEjectionPercent: 50},
				},
				Subsets: []*networking.Subset{
					{Name: "v1", Labels: map[string]string{"version": "v1"}},
					{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{
						LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
							ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}}}}}},
				},
			}},
			config.Config{Meta: config.Meta{Kind: schema.VirtualService, Namespace: "bench", Name: name}, Spec: &networking.VirtualService{
				Hosts: []string{name + ".example.com"}, Gateways: []string{"istio-system/gw"},
				Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{
					{Destination: &networking.Destination{Host: host, Subset: "v1", Port: &networking.PortSelector{Number: 80}}, Weight: 90},
					{Destination: &networking.Destination{Host: host, Subset: "v2", Port: &networking.PortSelector{Number: 80}}, Weight: 10},
				}}},
			}},
		)
	}
	return out
}

func TestWorkloadTranslatesCleanly(t *testing.T) {
	push := model.NewPushContext(memory.New(workload(20)))
	sr := BuildServices(push)
	gr := BuildGateway(push, push.GatewaysForProxy(&model.Proxy{Labels: map[string]string{"istio": "ingressgateway"}}))
	if len(sr.Errors)+len(gr.Errors) > 0 {
		t.Fatalf("errors: %v %v", sr.Errors, gr.Errors)
	}
	// 20 services x 2 ports x (default + 2 subsets).
	if len(sr.Clusters) != 120 || len(sr.Endpoints) != 120 {
		t.Errorf("%d clusters, %d assignments, want 120 each", len(sr.Clusters), len(sr.Endpoints))
	}
	if len(gr.Listeners) != 1 || len(gr.Routes) != 1 || len(gr.Routes[0].GetVirtualHosts()) != 20 {
		t.Errorf("%d listeners, %d routes, want 1 and 1 with 20 virtual hosts", len(gr.Listeners), len(gr.Routes))
	}
}

// BenchmarkTranslate measures a full push at 1,000 services: clusters and
// endpoints once, then listeners and routes for one gateway configuration.
func BenchmarkTranslate(b *testing.B) {
	push := model.NewPushContext(memory.New(workload(1000)))
	proxy := &model.Proxy{Labels: map[string]string{"istio": "ingressgateway"}}
	gws := push.GatewaysForProxy(proxy)
	b.Run("BuildServices+BuildGateway", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sr := BuildServices(push)
			gr := BuildGateway(push, gws)
			if len(sr.Clusters) != 6000 || len(gr.Listeners) != 1 {
				b.Fatalf("%d clusters, %d listeners", len(sr.Clusters), len(gr.Listeners))
			}
		}
	})
	b.Run("BuildServices", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			BuildServices(push)
		}
	})
	b.Run("BuildGateway", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			BuildGateway(push, gws)
		}
	})
}
