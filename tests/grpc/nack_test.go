package grpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster/policy"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/grpcgen"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/debug"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// leakyLBGenerator is the translator with one guard removed, on purpose:
// where a DestinationRule asks for RANDOM load balancing, grpcgen warns and
// sends ROUND_ROBIN; this generator sends RANDOM, which Envoy accepts
// (a valid lb_policy) and gRPC-Go NACKs ("unexpected lbPolicy"). grpcgen
// itself never emits a resource gRPC rejects, so the rejection path can
// only be exercised with such a deliberately broken generator.
type leakyLBGenerator struct{ core.DefaultGenerator }

func (g leakyLBGenerator) BuildProxyless(push *model.PushContext) grpcgen.Resources {
	res := g.DefaultGenerator.BuildProxyless(push)
	for i, c := range res.Clusters {
		port, subset, host, err := model.ParseClusterName(c.GetName())
		if err != nil {
			continue
		}
		pol := policy.For(push, host, port, subset)
		if pol.LoadBalancer.GetSimple() == networking.LoadBalancerSettings_RANDOM {
			c = proto.Clone(c).(*clusterv3.Cluster)
			c.LbPolicy = clusterv3.Cluster_RANDOM
			res.Clusters[i] = c
		}
	}
	return res
}

// plane is the control plane assembled as pilot/pkg/bootstrap assembles it
// (file source, discovery server, ADS and debug listeners), but with the
// generator above, which bootstrap.Options cannot inject.
type plane struct {
	ads, debug net.Listener
}

func startPlane(t *testing.T, dir string, gen core.Generator) *plane {
	t.Helper()
	logger := serverenv.Logger(t, slog.LevelInfo)
	store, err := file.New(file.Options{Dir: dir, RescanInterval: time.Hour, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	ds := xds.NewDiscoveryServer(xds.Options{
		Store: store, Errors: store, Generator: gen, Logger: logger, Registry: registry,
		Debounce: debounce.Options{QuietPeriod: 5 * time.Millisecond, MaxDelay: 100 * time.Millisecond},
	})
	for _, k := range schema.Kinds() {
		store.RegisterEventHandler(k, func(_, cur config.Config, ev model.Event) {
			ds.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: map[config.Key]struct{}{cur.Key(): {}},
				Reasons: map[string]int{"config-" + ev.String(): 1}, Start: time.Now()})
		})
	}
	gs := grpc.NewServer()
	ds.Register(gs)
	// The debug endpoints and /metrics, as bootstrap mounts them.
	mux := debug.NewMux(debug.Options{State: ds})
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	p := &plane{}
	if p.ads, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if p.debug, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { store.Run(ctx) })
	wg.Go(func() { ds.Run(ctx) })
	wg.Go(func() { _ = gs.Serve(p.ads) })
	wg.Go(func() {
		if err := hs.Serve(p.debug); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("debug server: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		gs.Stop()
		_ = hs.Close()
		wg.Wait()
	})
	// The file source has no sync channel.
	poll.Until(t, "the config source to sync", store.HasSynced, poll.Timeout(waitTimeout), poll.Interval(10*time.Millisecond))
	ds.Synced()
	select {
	case <-ds.FirstPushDone():
	case <-time.After(waitTimeout):
		t.Fatal("no first push")
	}
	return p
}

func (p *plane) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + p.debug.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

var rejectsCDS = regexp.MustCompile(`(?m)^pilot_total_xds_rejects\{type="cds"\} (\d+)`)

// cdsNack returns the last cluster NACK /debug/syncz shows for node, if any.
func (p *plane) cdsNack(t *testing.T, node string) *debugapi.SyncNack {
	t.Helper()
	var sz debugapi.Syncz
	if err := json.Unmarshal([]byte(p.get(t, "/debug/syncz")), &sz); err != nil {
		t.Fatal(err)
	}
	for _, px := range sz.Proxies {
		if px.ID != node {
			continue
		}
		for _, ty := range px.Types {
			if strings.HasSuffix(ty.TypeURL, "Cluster") && ty.LastNack != nil {
				return ty.LastNack
			}
		}
	}
	return nil
}

func randomLBRule() string {
	return subsetsRule("v1", "v2") + `  trafficPolicy:
    loadBalancer:
      simple: RANDOM
`
}

// TestRejectedUpdateKeepsLastGoodConfig: an update gRPC NACKs leaves the
// client on its last accepted clusters, with no failed RPC; the rejection
// shows in /debug/syncz and in pilot_total_xds_rejects; a later good
// update is accepted and applied.
func TestRejectedUpdateKeepsLastGoodConfig(t *testing.T) {
	a := startBackend(t, "a", map[string]string{"version": "v1"})
	b := startBackend(t, "b", map[string]string{"version": "v2"})
	e := &env{t: t, dir: t.TempDir()}
	e.write("se.yaml", serviceEntry(a, b))
	e.write("dr.yaml", subsetsRule("v1", "v2"))
	e.write("vs.yaml", allTo("v1"))
	p := startPlane(t, e.dir, leakyLBGenerator{})

	const pod = "nack"
	node := "sidecar~127.0.0.1~" + pod + ".default~default.svc.cluster.local"
	res, err := xdsResolver(p.ads.Addr().String(), pod)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(target, grpcInsecure(), grpc.WithResolvers(res))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := newTestClient(cc)
	waitUntil(t, "v1 route", func() (string, error) { return call(c) }, func(n string, err error) bool { return err == nil && n == "a" })
	if n := p.cdsNack(t, node); n != nil {
		t.Fatalf("NACK before the bad update: %+v", n)
	}

	// The bad update: every echo cluster now says RANDOM.
	e.write("dr.yaml", randomLBRule())
	var nack *debugapi.SyncNack
	rpcs := 0
	poll.Until(t, "gRPC to NACK the RANDOM clusters (in syncz)", func() bool {
		name, err := call(c)
		rpcs++
		if err != nil || name != "a" {
			t.Fatalf("RPC %d during the rejected update answered %q, err %v; want a", rpcs, name, err)
		}
		nack = p.cdsNack(t, node)
		return nack != nil
	}, poll.Timeout(waitTimeout), poll.Tries(20000), poll.Interval(0))
	t.Logf("NACK after %d RPCs: %s", rpcs, nack.Message)
	if !strings.Contains(nack.Message, "lbPolicy") && !strings.Contains(nack.Message, "RANDOM") {
		t.Errorf("NACK message %q does not name the lb policy", nack.Message)
	}
	m := rejectsCDS.FindStringSubmatch(p.get(t, "/metrics"))
	if m == nil {
		t.Fatalf("no pilot_total_xds_rejects for clusters in /metrics")
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("pilot_total_xds_rejects for clusters = %d, want >= 1", n)
	}
	// Traffic keeps flowing on the last good config.
	for range 200 {
		if name, err := call(c); err != nil || name != "a" {
			t.Fatalf("after the NACK answered %q, err %v; want a", name, err)
		}
	}

	// A good update is accepted and applied on the same channel.
	e.write("dr.yaml", subsetsRule("v1", "v2"))
	e.write("vs.yaml", allTo("v2"))
	waitUntil(t, "v2 route after the fix", func() (string, error) { return call(c) }, func(n string, err error) bool {
		if err != nil {
			t.Fatalf("RPC failed after the fix: %v", err)
		}
		return n == "b"
	})
}
