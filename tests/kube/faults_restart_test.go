package kube

import (
	"bufio"
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
	"github.com/wayfinder-dev/wayfinder/tools/loadgen/load"
)

// restartGateways is how many gateways TestControlPlaneRestartUnderGateways
// connects: 100 in `make test` (two shared cores); the 500 with
// `go test ./tests/kube -run RestartUnderGateways -restart-gateways 500`.
var restartGateways = flag.Int("restart-gateways", 100, "gateways connected while TestControlPlaneRestartUnderGateways restarts the control plane")

// runningServer is a pilot-discovery the test stops itself.
type runningServer struct {
	s    *bootstrap.Server
	stop func() error
}

func runServer(t *testing.T, opts bootstrap.Options) *runningServer {
	t.Helper()
	s, err := bootstrap.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	var runErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("server exited before ready: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("server not ready")
	}
	return &runningServer{s: s, stop: stop}
}

// The control plane restarts under -restart-gateways connected gateways
// (the load tool's Envoy-like clients, reconnecting with Envoy's backoff),
// and a VirtualService changes while it is down. Every gateway
// reconnects, none is refused (new streams beyond the admission rate wait,
// they are not turned away) or NACKs, and every one converges on the
// change; the time from the stop to the last gateway's ACK is logged.
func TestControlPlaneRestartUnderGateways(t *testing.T) {
	n := *restartGateways
	c, ns := newCluster(t, "restart-gws")
	e := clientEnv(t, c, ns)
	var err error
	host := e.host("reviews")
	e.createGateway("gw")
	vs := func(prefix string) networking.VirtualService {
		return networking.VirtualService{Hosts: []string{"a.example.com"}, Gateways: []string{"gw"}, Http: []*networking.HTTPRoute{{
			Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: prefix}}}},
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host, Port: &networking.PortSelector{Number: 9080}}}},
		}}}
	}
	_, err = e.istio.NetworkingV1().VirtualServices(ns).Create(ctx, &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}, Spec: vs("/before")}, metav1.CreateOptions{})
	e.must(err)
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.7.0.1", "", true})

	// One address for both servers, as a Service would give.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	e.must(err)
	addr := l.Addr().String()
	l.Close()
	opts := func() bootstrap.Options {
		return bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns}, GRPCAddr: addr, HTTPAddr: "127.0.0.1:0",
			Debounce:      debounce.Options{QuietPeriod: 10 * time.Millisecond, MaxDelay: time.Second},
			ShutdownGrace: 2 * time.Second, Logger: serverenv.Logger(t, slog.LevelWarn)}
	}
	first := runServer(t, opts())

	var second *runningServer
	var stoppedAt, readyAt time.Time
	rep, err := load.Run(context.Background(), load.Options{
		Address: addr, Gateways: n, Timeout: 3 * time.Minute, UpdatePrefix: "/after",
		Logger: slog.New(slog.DiscardHandler),
		Trigger: func(context.Context) error {
			stoppedAt = time.Now()
			if err := first.stop(); err != nil {
				t.Errorf("first server stopped with %v", err)
			}
			cur, err := e.istio.NetworkingV1().VirtualServices(ns).Get(ctx, "a", metav1.GetOptions{})
			e.must(err)
			cur.Spec = vs("/after")
			_, err = e.istio.NetworkingV1().VirtualServices(ns).Update(ctx, cur, metav1.UpdateOptions{})
			e.must(err)
			second = runServerRetry(t, opts)
			readyAt = time.Now()
			return nil
		},
	})
	e.must(err)
	if rep.TimedOut || rep.Cold.Converged != n || rep.Update == nil || rep.Update.Converged != n {
		t.Fatalf("not every gateway converged: cold %d/%d, after the restart %+v, timed out %v; errors %v",
			rep.Cold.Converged, n, rep.Update, rep.TimedOut, rep.ErrorSamples)
	}
	t.Logf("%d gateways: cold p99 %.0f ms; after the restart, all reconverged %.0f ms after the stop (p50 %.0f ms), "+
		"the new server was ready %v after the stop; %d reconnects, %d failed streams",
		n, rep.Cold.P99Ms, rep.Update.MaxMs, rep.Update.P50Ms, readyAt.Sub(stoppedAt).Round(time.Millisecond), rep.Reconnects, rep.Errors)
	if rep.NACKs != 0 {
		t.Errorf("gateways NACKed %d responses: %v", rep.NACKs, rep.NACKSamples)
	}
	for _, s := range rep.ErrorSamples {
		if strings.Contains(s, "ResourceExhausted") {
			t.Errorf("a gateway was refused: %s", s)
		}
	}
	if got := sumMetric(t, second.s, "wayfinder_xds_limit_exceeded_total"); got != 0 {
		t.Errorf("the restarted server refused %v streams or requests over a limit", got)
	}
}

// runServerRetry starts a server on an address the previous one has just
// released; the bind is retried briefly.
func runServerRetry(t *testing.T, opts func() bootstrap.Options) *runningServer {
	t.Helper()
	var o bootstrap.Options
	// Polled: the old listener's port is released asynchronously.
	poll.Seen(t, "the address to be released", func() (string, bool) {
		o = opts()
		l, err := net.Listen("tcp", o.GRPCAddr)
		if err != nil {
			return o.GRPCAddr + ": " + err.Error(), false
		}
		l.Close()
		return "", true
	}, poll.Timeout(10*time.Second), poll.Interval(20*time.Millisecond))
	return runServer(t, o)
}

// sumMetric adds every sample of metric name on s's /metrics.
func sumMetric(t *testing.T, s *bootstrap.Server, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}
