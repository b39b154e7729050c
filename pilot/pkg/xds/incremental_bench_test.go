package xds

import (
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// changeOneVirtualService returns cfgs with the weights of VirtualService
// svc-i flipped by round, and the changed object's key.
func changeOneVirtualService(cfgs []config.Config, i, round int) ([]config.Config, config.Key) {
	out := make([]config.Config, len(cfgs))
	copy(out, cfgs)
	name := "svc-" + strconv.Itoa(i)
	for j := range out {
		if out[j].Kind != schema.VirtualService || out[j].Name != name {
			continue
		}
		c := out[j].DeepCopy()
		w := int32(10 + round%80)
		spec := c.Spec.(*networking.VirtualService)
		spec.Http[0].Route[0].Weight, spec.Http[0].Route[1].Weight = 100-w, w
		out[j] = c
		return out, c.Key()
	}
	panic("no VirtualService " + name)
}

// processCPU is the process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOneVirtualServiceChange compares the server CPU of the push
// after one VirtualService changed with that of a full translation (every
// cache and the interner cold), at 5,000 services and one gateway group
// of 10 proxies. It prints both per operation: one-VS change CPU should be
// under a tenth of the full translation's. live-MB is the heap in use after
// the last push and a collection.
func BenchmarkOneVirtualServiceChange(b *testing.B) {
	const services, proxies = 5000, 10
	cfgs := benchWorkload(services)
	for _, mode := range []string{"full-translation", "one-vs-change"} {
		b.Run(mode, func(b *testing.B) {
			store := newTestStore(cfgs...)
			s := NewDiscoveryServer(Options{Store: store, Registry: prometheus.NewRegistry(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			for i := range proxies {
				id := nodeID("gw-" + strconv.Itoa(i))
				p := &model.Proxy{ID: id, Type: model.Router, Namespace: "istio-system", Labels: ingressLabels}
				s.proxies[id] = &proxyState{proxy: p, streams: map[streamKey]*streamState{}, pending: map[string]pendingChange{}}
			}
			s.push(&model.PushRequest{Full: true, Reasons: map[string]int{"bench": 1}})
			round := 0
			var cpu time.Duration
			for b.Loop() {
				round++
				req := &model.PushRequest{Full: true, Reasons: map[string]int{"bench": 1}}
				b.StopTimer()
				if mode == "full-translation" {
					s.resetCaches()
				} else {
					next, key := changeOneVirtualService(cfgs, round%services, round)
					store.set(next...)
					req.ConfigsUpdated = map[config.Key]struct{}{key: {}}
				}
				b.StartTimer()
				c0 := processCPU()
				s.push(req)
				cpu += processCPU() - c0
			}
			ms := float64(cpu.Microseconds()) / 1000 / float64(b.N)
			b.ReportMetric(ms, "cpu-ms/op")
			// What the server keeps between pushes (caches, interner, push
			// context; the workload and the store too, the same in every
			// version), after a collection.
			runtime.GC()
			var mem runtime.MemStats
			runtime.ReadMemStats(&mem)
			b.ReportMetric(float64(mem.HeapAlloc)/(1<<20), "live-MB")
			runtime.KeepAlive(s)
			b.Logf("%s CPU: %.1f ms per push; route cache %+v", mode, ms, s.tr.Generator().(core.DefaultGenerator).Caches.Routes.Stats())
		})
	}
}

// resetCaches forgets everything kept across pushes, so the next push
// translates and marshals everything, like the first.
func (s *DiscoveryServer) resetCaches() {
	s.tr.ResetInterner()
	if g, ok := s.tr.Generator().(core.DefaultGenerator); ok && g.Caches.Routes != nil {
		g.Caches.Routes.Reset()
	}
}
