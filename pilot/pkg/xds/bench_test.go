package xds

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// benchWorkload is n services (two ports, three endpoints, a
// DestinationRule with two subsets), one Gateway for every host on port 80
// and a VirtualService per service splitting between the subsets.
func benchWorkload(n int) []config.Config {
	out := []config.Config{gateway("istio-system", "gw", ingressLabels, 80, "*")}
	for i := range n {
		name := "svc-" + strconv.Itoa(i)
		host := name + ".bench.svc.cluster.local"
		var eps []*networking.WorkloadEntry
		for j := range 3 {
			eps = append(eps, &networking.WorkloadEntry{Address: fmt.Sprintf("10.%d.%d.%d", i/250, i%250, j+1),
				Labels: map[string]string{"version": "v" + strconv.Itoa(j%2+1)}})
		}
		out = append(out,
			config.Config{Meta: config.Meta{Kind: schema.ServiceEntry, Namespace: "bench", Name: name}, Spec: &networking.ServiceEntry{
				Hosts: []string{host}, Resolution: networking.ServiceEntry_STATIC, Endpoints: eps,
				Ports: []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}, {Number: 9090, Name: "grpc", Protocol: "GRPC"}},
			}},
			config.Config{Meta: config.Meta{Kind: schema.DestinationRule, Namespace: "bench", Name: name}, Spec: &networking.DestinationRule{
				Host: host,
				Subsets: []*networking.Subset{
					{Name: "v1", Labels: map[string]string{"version": "v1"}},
					{Name: "v2", Labels: map[string]string{"version": "v2"}},
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

// benchServer is a server with the real translators and n connected
// proxies of one gateway group (without streams: the benchmark measures
// building and marshaling, not the network). edit, when given, changes
// the server's options.
func benchServer(b *testing.B, n int, edit ...func(*Options)) (*DiscoveryServer, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	opts := Options{Store: newTestStore(benchWorkload(1000)...), Registry: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, e := range edit {
		e(&opts)
	}
	s := NewDiscoveryServer(opts)
	for i := range n {
		id := nodeID("gw-" + strconv.Itoa(i))
		p := &model.Proxy{ID: id, Type: model.Router, Namespace: "istio-system", Labels: ingressLabels}
		s.proxies[id] = &proxyState{proxy: p, streams: map[streamKey]*streamState{}, pending: map[string]pendingChange{}}
	}
	return s, reg
}

func marshalCount(b *testing.B, reg *prometheus.Registry) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "wayfinder_xds_marshal_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// BenchmarkPush measures one full push at 1,000 services (6,000 clusters
// and assignments, one listener, one route configuration of 1,000 virtual
// hosts): the push context, translation, validation, marshaling and the
// views of 1 or 100 proxies of one gateway group. "cold" marshals every
// resource (a fresh interner each time, as on the first push); "warm"
// pushes unchanged config, so nothing is marshaled again.
func BenchmarkPush(b *testing.B) {
	for _, n := range []int{1, 100} {
		for _, mode := range []string{"cold", "warm"} {
			b.Run(fmt.Sprintf("proxies=%d/%s", n, mode), func(b *testing.B) {
				s, reg := benchServer(b, n)
				req := &model.PushRequest{Full: true, Reasons: map[string]int{"bench": 1}}
				s.push(req) // warm the interner (and the first-push bookkeeping)
				before := marshalCount(b, reg)
				b.ReportAllocs()
				for b.Loop() {
					if mode == "cold" {
						s.tr.ResetInterner()
					}
					s.push(req)
				}
				b.ReportMetric((marshalCount(b, reg)-before)/float64(b.N), "marshals/op")
				v := s.proxies[nodeID("gw-0")].view
				if len(v.Sets[snapshot.CDS].Items) != 6000 || len(v.Sets[snapshot.LDS].Items) != 1 {
					b.Fatalf("%d clusters, %d listeners", len(v.Sets[snapshot.CDS].Items), len(v.Sets[snapshot.LDS].Items))
				}
				for _, p := range s.proxies {
					if p.view != v {
						b.Fatal("proxies of one group do not share a view")
					}
				}
			})
		}
	}
}

// BenchmarkEndpointPush measures an endpoints-only push naming one service
// at 1,000 services (6,000 assignments) with 500 proxies of one gateway
// group: what each EndpointSlice change costs the server under churn,
// sending aside (no streams are open). "registry": the services come from
// a service registry, as in Kubernetes mode, whose endpoint changes are
// what asks for such pushes; "service-entries": they are ServiceEntries
// named by an endpoints-only request (the push context is indexed again).
func BenchmarkEndpointPush(b *testing.B) {
	for _, mode := range []string{"registry", "service-entries"} {
		b.Run(mode, func(b *testing.B) {
			key := config.Key{Kind: schema.ServiceEntry, Namespace: "bench", Name: "svc-1"}
			reg := &benchRegistry{}
			var edit []func(*Options)
			if mode == "registry" {
				// The same services, from a registry instead of the store.
				reg.services = model.NewPushContext(newTestStore(benchWorkload(1000)...)).Services()
				edit = append(edit, func(o *Options) {
					o.Store = newTestStore(slices.DeleteFunc(benchWorkload(1000), func(c config.Config) bool { return c.Kind == schema.ServiceEntry })...)
					o.Registries = []model.ServiceDiscovery{reg}
				})
			}
			s, _ := benchServer(b, 500, edit...)
			s.push(&model.PushRequest{Full: true, Reasons: map[string]int{"bench": 1}})
			req := &model.PushRequest{Reasons: map[string]int{"endpoint": 1}, ConfigsUpdated: map[config.Key]struct{}{key: {}}}
			round := 0
			b.ReportAllocs()
			for b.Loop() {
				if mode == "registry" {
					b.StopTimer()
					round++
					reg.moveEndpoint(key, round)
					b.StartTimer()
				}
				s.push(req)
			}
			if st := s.state; !st.EndpointsOnly || len(st.Groups) != 1 {
				b.Fatalf("endpointsOnly=%v, %d groups", st.EndpointsOnly, len(st.Groups))
			}
		})
	}
}

// benchRegistry serves a fixed list of services, one of which moveEndpoint
// replaces with a copy whose first endpoint has a new address.
type benchRegistry struct{ services []*model.Service }

func (r *benchRegistry) Services() []*model.Service { return r.services }

func (r *benchRegistry) moveEndpoint(source config.Key, round int) {
	list := slices.Clone(r.services)
	for i, svc := range list {
		if svc.Source != source {
			continue
		}
		moved := *svc
		moved.Endpoints = slices.Clone(svc.Endpoints)
		ep := *moved.Endpoints[0]
		ep.Address = fmt.Sprintf("10.200.%d.%d", round/250%250, round%250+1)
		moved.Endpoints[0] = &ep
		list[i] = &moved
	}
	r.services = list
}
