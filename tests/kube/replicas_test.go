package kube

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	metav1alpha1 "istio.io/api/meta/v1alpha1"

	kubestatus "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// leaseDuration is client-go's default, which every status Lease uses.
const leaseDuration = 15 * time.Second

// Two pilot-discovery processes against one API server, as the Deployment
// runs them: exactly one creates the CA Secret and both serve its
// certificate; gateways spread over both get the same config; only the
// Lease holder writes status. SIGTERM to the leader: its readiness fails,
// it accepts no new connection, and it closes its streams spread over
// --drain-duration with Unavailable; each of its gateways reconnects to
// the survivor (as Envoy would through the Service) and gets exactly the
// config the survivor's own gateways have; the survivor takes the Lease
// well within the Lease duration and writes status from then on; a config
// change after that reaches every gateway.
func TestTwoReplicasShareGatewaysAndHandOverOnSIGTERM(t *testing.T) {
	c, ns := newCluster(t, "replicas")
	e := clientEnv(t, c, ns)
	e.createService("web")
	e.applySlice("web", "web-1", ep{"10.1.0.1", "", true}, ep{"10.1.0.2", "", true})
	e.createGateway("gw")
	e.createVS(e.virtualService("web", "web.example.com", e.host("web"), ""))

	const drain = 4 * time.Second
	// Both start together, so that both race to create the CA Secret.
	names := []string{"wayfinder-a", "wayfinder-b"}
	bins := make([]*serverenv.Binary, 2)
	var wg sync.WaitGroup
	for i, pod := range names {
		wg.Go(func() {
			bins[i] = serverenv.StartBinary(t, binary(t), "--kubeconfig", c.Kubeconfig, "--watch-namespaces", ns,
				"--pod-name", pod, "--pod-namespace", ns, "--debounce-after", "10ms", "--drain-duration", drain.String())
		})
	}
	wg.Wait()
	for _, b := range bins {
		if b == nil {
			t.FailNow() // StartBinary reported why
		}
		b.WaitLogFunc("ready", msgIs("config synced and first push computed"), waitTimeout)
	}

	// The CA Secret: created by one, served by both.
	created := 0
	for _, b := range bins {
		created += strings.Count(b.LogText(), "created self-signed CA and serving certificate")
	}
	if created != 1 {
		t.Errorf("the CA Secret was created %d times by two replicas, want once", created)
	}
	if a, b := replicaServingCert(t, bins[0]), replicaServingCert(t, bins[1]); !slices.Equal(a, b) {
		t.Error("the replicas serve different certificates; both should serve the one in Secret wayfinder-ca")
	}

	// Gateways spread over both replicas.
	const n = 8
	gws := make([]*adsc.Client, n)
	on := make([]int, n) // which replica each gateway is on
	for i := range gws {
		on[i] = i % 2
		gws[i] = serverenv.Gateway(t, bins[on[i]].GRPCAddr, fmt.Sprintf("gw-%d", i), map[string]string{"istio": "ingressgateway"}, nil)
	}
	routed := func(s adsc.State) bool {
		return virtualHost(s, "web.example.com", "") && endpointCount(s, "outbound|9080||"+e.host("web")) == 2 && replicaAllACKed(s)
	}
	for i, g := range gws {
		waitFor(t, g, fmt.Sprintf("gateway %d converged", i), routed)
	}
	for i := 2; i < n; i++ {
		if !replicaSameResources(gws[i].State(), gws[i%2].State()) {
			t.Errorf("gateway %d differs from gateway %d", i, i%2)
		}
	}
	if !replicaSameResources(gws[0].State(), gws[1].State()) {
		t.Errorf("the replicas serve different config:\n%s\n%s", describe(gws[0].State()), describe(gws[1].State()))
	}

	// Exactly one leads and writes status.
	leader := replicaWaitLeader(t, bins, "istio")
	replicaWaitLeader(t, bins, "ingress") // its own Lease: exactly one holds it too
	survivor := 1 - leader
	e.waitVSStatus("web", "Reconciled by the leader", func(s *metav1alpha1.IstioStatus) bool {
		return replicaReconciledTrue(s)
	})
	if w := replicaScrape(t, bins[leader], `wayfinder_status_writes_total{writer="istio"}`); w == 0 {
		t.Errorf("the leader (%s) wrote no status", names[leader])
	}
	if w := replicaScrape(t, bins[survivor], `wayfinder_status_writes_total{writer="istio"}`); w != 0 {
		t.Errorf("the replica not holding the Lease (%s) wrote status %v times", names[survivor], w)
	}
	before := map[int]adsc.State{}
	for i, g := range gws {
		before[i] = g.State()
	}

	// SIGTERM to the leader.
	victim := bins[leader]
	stopped := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- victim.Stop(waitTimeout) }()

	// Its gateways are closed one by one with Unavailable; each reconnects
	// to the survivor, as through the Service.
	type closeAt struct {
		gw int
		at time.Duration
	}
	closes := make(chan closeAt, n)
	var victims []int
	for i, g := range gws {
		if on[i] != leader {
			continue
		}
		victims = append(victims, i)
		go func() {
			<-g.Done()
			closes <- closeAt{i, time.Since(stopped)}
		}()
	}
	var offsets []time.Duration
	for range victims {
		var cl closeAt
		select {
		case cl = <-closes:
		case <-timeAfter():
			t.Fatalf("the draining replica closed only %d of its %d streams", len(offsets), len(victims))
		}
		if code := status.Code(gws[cl.gw].Err()); code != codes.Unavailable {
			t.Errorf("gateway %d: stream ended with %v, want Unavailable (Envoy retries it)", cl.gw, gws[cl.gw].Err())
		}
		if len(offsets) == 0 {
			// Draining: unready, and the listener accepts nothing new.
			if code := replicaHTTPStatus(victim.HTTPAddr + "/healthz/ready"); code == http.StatusOK {
				t.Error("/healthz/ready still 200 on the draining replica")
			}
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			nc, err := adsc.Dial(dctx, adsc.Config{Address: victim.GRPCAddr,
				Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: "late", Namespace: "istio-system"})})
			cancel()
			if err == nil { // connected before the listener closed: the stream is refused
				select {
				case <-nc.Done():
					if code := status.Code(nc.Err()); code != codes.Unavailable {
						t.Errorf("a new stream on the draining replica ended with %v, want Unavailable", nc.Err())
					}
				case <-timeAfter():
					t.Error("the draining replica accepted a new ADS stream")
				}
				nc.Close()
			}
		}
		offsets = append(offsets, cl.at)
		gws[cl.gw] = serverenv.Gateway(t, bins[survivor].GRPCAddr, fmt.Sprintf("gw-%d", cl.gw), map[string]string{"istio": "ingressgateway"}, nil)
		on[cl.gw] = survivor
	}
	t.Logf("streams of the draining replica closed at %v after SIGTERM (drain %v)", offsets, drain)
	// Spread, not a wave: n streams over d are closed at i*d/n; a loaded
	// machine only stretches that.
	if spread, want := offsets[len(offsets)-1]-offsets[0], drain*time.Duration(len(victims)-1)/time.Duration(len(victims))/2; spread < want {
		t.Errorf("closes spread over %v, want at least %v: %v", spread, want, offsets)
	}
	if err := <-exited; err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}

	// Nothing lost: every gateway, reconnected or not, holds exactly what
	// the survivor's gateways held before.
	ref := before[survivor] // gateway `survivor` never moved
	for i, g := range gws {
		waitFor(t, g, fmt.Sprintf("gateway %d converged on the survivor", i), routed)
		s := g.State()
		if !replicaSameResources(s, ref) {
			t.Errorf("gateway %d after the handover differs from the survivor's config before:\n%s\nwant\n%s", i, describe(s), describe(ref))
		}
		for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType, adsc.RouteType} {
			if s.Version(typ) != ref.Version(typ) {
				t.Errorf("gateway %d: %s version %q, the survivor served %q", i, adsc.ShortName(typ), s.Version(typ), ref.Version(typ))
			}
		}
		if !replicaSameResources(s, before[i]) {
			t.Errorf("gateway %d lost or changed config in the handover", i)
		}
	}

	// The survivor takes the Lease, well within the Lease duration (the
	// leader released it on SIGTERM), and only then writes.
	if poll.Wait(func() bool { return replicaScrape(t, bins[survivor], `wayfinder_status_leader{writer="istio"}`) == 1 },
		poll.Timeout(time.Until(stopped.Add(leaseDuration))), poll.Interval(50*time.Millisecond)) != nil {
		t.Fatalf("the survivor did not take the status Lease within %v of SIGTERM; log:\n%s", leaseDuration, bins[survivor].LogText())
	}
	t.Logf("status Lease taken over %v after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	stoppedLeading := replicaLogTime(t, victim, "stopped leading: no longer writing Istio object status")
	startedLeading := replicaLogTime(t, bins[survivor], "leading: writing Istio object status")
	if !stoppedLeading.Before(startedLeading) {
		t.Errorf("the survivor started leading at %v, before the old leader stopped at %v", startedLeading, stoppedLeading)
	}
	t.Logf("old leader stopped leading %v after SIGTERM, the survivor started %v after", stoppedLeading.Sub(stopped).Round(time.Millisecond), startedLeading.Sub(stopped).Round(time.Millisecond))
	// The Lease is released as the drain begins, not after it.
	if drained := replicaLogTime(t, victim, "drained: every ADS stream closed"); !stoppedLeading.Before(drained) {
		t.Errorf("the old leader released the status Lease at %v, after its drain ended at %v", stoppedLeading, drained)
	}

	// A change after the handover reaches every gateway, and its status is
	// written by the new leader.
	e.setVSHosts("web", "web.example.com", "after.example.com")
	for i, g := range gws {
		waitFor(t, g, fmt.Sprintf("gateway %d got the change", i), func(s adsc.State) bool {
			return virtualHost(s, "after.example.com", "") && replicaAllACKed(s)
		})
	}
	e.waitVSStatus("web", "generation 2 reconciled by the new leader", func(s *metav1alpha1.IstioStatus) bool {
		return replicaReconciledTrue(s) && s.GetObservedGeneration() == 2
	})
	if w := replicaScrape(t, bins[survivor], `wayfinder_status_writes_total{writer="istio"}`); w == 0 {
		t.Error("the new leader wrote no status")
	}
	if err := bins[survivor].Stop(waitTimeout); err != nil {
		t.Errorf("survivor exit after SIGTERM: %v", err)
	}
}

// replicaAllACKed reports whether every type the client asked for has an ACKed
// version and no pending NACK.
func replicaAllACKed(s adsc.State) bool {
	for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType, adsc.RouteType} {
		if ts, ok := s.Types[typ]; !ok || ts.Version == "" || ts.Error != "" {
			return false
		}
	}
	return true
}

// replicaSameResources reports whether a and b hold the same resources, name for
// name and field for field.
func replicaSameResources(a, b adsc.State) bool {
	return replicaSameMap(a.Clusters, b.Clusters) && replicaSameMap(a.Endpoints, b.Endpoints) &&
		replicaSameMap(a.Listeners, b.Listeners) && replicaSameMap(a.Routes, b.Routes)
}

func replicaSameMap[M proto.Message](a, b map[string]M) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !proto.Equal(v, w) {
			return false
		}
	}
	return true
}

func replicaReconciledTrue(s *metav1alpha1.IstioStatus) bool {
	for _, c := range s.GetConditions() {
		if c.GetType() == kubestatus.ConditionReconciled {
			return c.GetStatus() == "True"
		}
	}
	return false
}

// replicaWaitLeader waits until exactly one of bins holds the Lease of
// the status writer (istio or ingress) and returns its index.
func replicaWaitLeader(t *testing.T, bins []*serverenv.Binary, writer string) int {
	t.Helper()
	var leaders []int
	poll.Until(t, "a replica to take the "+writer+" status Lease", func() bool {
		leaders = nil
		for i, b := range bins {
			if replicaScrape(t, b, fmt.Sprintf(`wayfinder_status_leader{writer=%q}`, writer)) == 1 {
				leaders = append(leaders, i)
			}
		}
		if len(leaders) > 1 {
			t.Fatalf("replicas %v all hold the %s status Lease", leaders, writer)
		}
		return len(leaders) == 1
	}, apiPoll...)
	return leaders[0]
}

// replicaScrape reads one sample from a binary's /metrics; absent means 0.
func replicaScrape(t *testing.T, b *serverenv.Binary, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if name, val, ok := strings.Cut(sc.Text(), " "); ok && name == sample {
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// replicaHTTPStatus is the status code of a GET, 0 when nothing answers.
func replicaHTTPStatus(addr string) int {
	resp, err := http.Get("http://" + addr)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// replicaServingCert is the certificate chain a binary's secure ADS port presents.
func replicaServingCert(t *testing.T, b *serverenv.Binary) []byte {
	t.Helper()
	line := b.WaitLogFunc("serving", msgIs("serving"), waitTimeout)
	addr, _ := line["secureGrpc"].(string)
	if addr == "" {
		t.Fatalf("no secure port in %v", line)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only the presented certificate is compared
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

// replicaLogTime is the time of the first log line containing msg.
func replicaLogTime(t *testing.T, b *serverenv.Binary, msg string) time.Time {
	t.Helper()
	line := b.WaitLog(msg, waitTimeout)
	s, _ := line["time"].(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("log line %v: time: %v", line, err)
	}
	return ts
}
