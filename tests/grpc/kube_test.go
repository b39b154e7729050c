package grpc_test

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// cluster is the Kubernetes API server (etcd and kube-apiserver on
// loopback) the Kubernetes-mode tests share. It starts on the first
// cluster.Get, so the file-mode tests start nothing; without the binaries
// those tests are skipped (failed when CI=true).
var cluster apiserver.Shared

// kubeWaitTimeout bounds waits on the API server and on the control plane
// reading it: a shared 2-core machine under -race can take seconds.
const kubeWaitTimeout = 60 * time.Second

// storeEvents records, per object, the resource version of the last event
// the control plane's store delivered. Its handler runs on the store's event
// queue after the server's own handler, so once a version is seen here the
// store holds it and the server has asked for a push with it.
type storeEvents struct {
	mu      sync.Mutex
	seen    map[config.Key]string
	changed chan struct{} // closed and replaced on every event
}

func watchStore(s *bootstrap.Server, kinds ...schema.Kind) *storeEvents {
	w := &storeEvents{seen: map[config.Key]string{}, changed: make(chan struct{})}
	for _, k := range kinds {
		s.Store().RegisterEventHandler(k, func(_, cur config.Config, ev model.Event) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if ev == model.EventDelete {
				delete(w.seen, cur.Key())
			} else {
				w.seen[cur.Key()] = cur.ResourceVersion
			}
			close(w.changed)
			w.changed = make(chan struct{})
		})
	}
	return w
}

// wait blocks until the store has delivered key at resource version rv.
func (w *storeEvents) wait(t *testing.T, key config.Key, rv string) {
	t.Helper()
	timeout := time.After(kubeWaitTimeout)
	for {
		w.mu.Lock()
		got, ch := w.seen[key], w.changed
		w.mu.Unlock()
		if got == rv {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the control plane's store did not deliver %s at resource version %s (last seen %q)", key, rv, got)
		}
	}
}

// kubeWeightedVS splits host's traffic between subsets v1 and v2; with no
// gateways it applies to the mesh, proxyless clients included.
func kubeWeightedVS(ns, host string, weightV1 int32) *networkingv1.VirtualService {
	return &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
		Spec:       networking.VirtualService{Hosts: []string{host}, Http: weightedRoutes(host, weightV1)},
	}
}

func weightedRoutes(host string, weightV1 int32) []*networking.HTTPRoute {
	var dests []*networking.HTTPRouteDestination
	for _, d := range []struct {
		subset string
		weight int32
	}{{"v1", weightV1}, {"v2", 100 - weightV1}} {
		if d.weight > 0 {
			dests = append(dests, &networking.HTTPRouteDestination{
				Destination: &networking.Destination{Host: host, Subset: d.subset}, Weight: d.weight})
		}
	}
	return []*networking.HTTPRoute{{Route: dests}}
}

// TestKubeWeightedSplitAndShift is TestWeightedSplit and
// TestRouteChangeReachesRunningClient in Kubernetes mode: the control plane
// watches a fresh namespace of a real API server, and the ServiceEntry
// (STATIC endpoints at two real backends), DestinationRule and
// VirtualService are written through the Istio clientset.
//
// Ordering makes the first answered RPC meaningful: the DestinationRule and
// VirtualService are created first and seen by the control plane's store,
// then the ServiceEntry. The client's listener needs the ServiceEntry, and
// any push that has it was computed from a store already holding the other
// two, so the first successful RPC already runs on the 80/20 route.
//
// The v1 count of the 1,000 RPCs is Binomial(1000, 0.8): standard
// deviation sqrt(1000*0.8*0.2) = 12.6 RPCs (1.26%). The tolerance of ±5%
// (50 RPCs) is 3.95 standard deviations: a correct split fails it with
// probability below 1e-4, while a 70/30 or 90/10 split fails it almost
// surely.
//
// Then the VirtualService is updated through the API to send everything
// to v2 while RPCs run back to back on two ClientConns (the split client
// and a second one with its own ADS stream). Each loop is bounded (50,000
// RPCs or kubeWaitTimeout) and ends after 200 consecutive v2 answers once
// the update is in the store; 200 v2 answers in a row under the 80/20 route
// have probability 0.2^200. No RPC may fail, before, during or after.
func TestKubeWeightedSplitAndShift(t *testing.T) {
	start := time.Now()
	c := cluster.Get(t)
	ns := c.Namespace(t, "grpc-split")
	ic, err := istioclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	clusterUp := time.Now()

	a := startBackend(t, "a", map[string]string{"version": "v1"})
	b := startBackend(t, "b", map[string]string{"version": "v2"})
	s := serverenv.StartServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		Logger: serverenv.Logger(t, slog.LevelInfo)})
	serverUp := time.Now()
	events := watchStore(s, schema.ServiceEntry, schema.DestinationRule, schema.VirtualService)

	svcHost := "echo." + ns + ".svc.cluster.local"
	target := "xds:///" + svcHost + ":7070"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // API calls only
	defer cancel()
	api := ic.NetworkingV1()

	dr, err := api.DestinationRules(ns).Create(ctx, &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
		Spec: networking.DestinationRule{Host: svcHost, Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	drCreated := time.Now()
	vs, err := api.VirtualServices(ns).Create(ctx, kubeWeightedVS(ns, svcHost, 80), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	events.wait(t, config.Key{Kind: schema.DestinationRule, Namespace: ns, Name: "echo"}, dr.ResourceVersion)
	events.wait(t, config.Key{Kind: schema.VirtualService, Namespace: ns, Name: "echo"}, vs.ResourceVersion)
	rulesIn := time.Now()

	var endpoints []*networking.WorkloadEntry
	for _, be := range []*backend{a, b} {
		endpoints = append(endpoints, &networking.WorkloadEntry{Address: "127.0.0.1",
			Ports: map[string]uint32{"grpc": uint32(be.port)}, Labels: be.labels})
	}
	se, err := api.ServiceEntries(ns).Create(ctx, &networkingv1.ServiceEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
		Spec: networking.ServiceEntry{Hosts: []string{svcHost}, Location: networking.ServiceEntry_MESH_INTERNAL,
			Resolution: networking.ServiceEntry_STATIC, Endpoints: endpoints,
			Ports: []*networking.ServicePort{{Number: 7070, Name: "grpc", Protocol: "GRPC"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seCreated := time.Now()
	events.wait(t, config.Key{Kind: schema.ServiceEntry, Namespace: ns, Name: "echo"}, se.ResourceVersion)
	configIn := time.Now()
	t.Logf("timings: DestinationRule created in %v, VirtualService in %v, both in the store %v later; ServiceEntry created in %v, in the store %v later",
		drCreated.Sub(serverUp).Round(time.Millisecond), created.Sub(drCreated).Round(time.Millisecond), rulesIn.Sub(created).Round(time.Millisecond),
		seCreated.Sub(rulesIn).Round(time.Millisecond), configIn.Sub(seCreated).Round(time.Millisecond))

	dial := func(pod string) (*grpc.ClientConn, testpb.TestServiceClient) {
		t.Helper()
		res, err := xdsResolver(s.GRPCAddr().String(), pod)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(target, grpcInsecure(), grpc.WithResolvers(res))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc, newTestClient(cc)
	}
	cc1, c1 := dial("kube-split")
	// Until the push with the ServiceEntry arrives the listener may be
	// missing and RPCs fail; the first answer is the event that ends the wait.
	waitUntil(t, "the first answer through the 80/20 route", func() (string, error) { return call(c1) },
		func(_ string, err error) bool { return err == nil })
	firstRPC := time.Now()

	const n = 1000
	counts := map[string]int{}
	for range n {
		name, err := call(c1)
		if err != nil {
			t.Fatalf("RPC %d of the split failed: %v", counts["a"]+counts["b"]+1, err)
		}
		counts[name]++
	}
	splitDone := time.Now()
	share := float64(counts["a"]) / n
	sd := math.Sqrt(n*0.8*0.2) / n
	t.Logf("80/20 split over %d RPCs: a(v1)=%d (%.1f%%) b(v2)=%d (%.1f%%), %.2f standard deviations from 80%%",
		n, counts["a"], 100*share, counts["b"], 100*float64(counts["b"])/n, math.Abs(share-0.8)/sd)
	if counts["a"]+counts["b"] != n {
		t.Errorf("answers from unexpected backends: %v", counts)
	}
	if math.Abs(share-0.8) > 0.05 {
		t.Errorf("v1 share %.3f is outside 0.80±0.05 (%.1f standard deviations of %.4f)", share, math.Abs(share-0.8)/sd, sd)
	}

	// Shift everything to v2 while both clients run.
	cc2, c2 := dial("kube-shift")
	waitUntil(t, "the second client's first answer", func() (string, error) { return call(c2) },
		func(_ string, err error) bool { return err == nil })

	type loopResult struct {
		got         counter
		converged   bool
		rpcs        int
		convergedAt time.Time // first v2 answer of the final run of 200
	}
	updated := make(chan struct{}) // closed once the store holds the update
	stop := make(chan struct{})    // closed when the test ends early
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	loop := func(c testpb.TestServiceClient, r *loopResult) {
		defer wg.Done()
		const need = 200
		run := 0
		var runStart time.Time
		deadline := time.Now().Add(kubeWaitTimeout)
		for ; r.rpcs < 50000 && time.Now().Before(deadline); r.rpcs++ {
			select {
			case <-stop:
				return
			default:
			}
			name, err := call(c)
			r.got.add(name, err)
			if err != nil || name != "b" {
				run = 0
				continue
			}
			if run == 0 {
				runStart = time.Now()
			}
			run++
			if run < need {
				continue
			}
			select {
			case <-updated:
				r.converged, r.convergedAt = true, runStart
				r.rpcs++
				return
			default:
			}
		}
	}
	results := []*loopResult{{}, {}}
	wg.Add(2)
	go loop(c1, results[0])
	go loop(c2, results[1])

	cur, err := api.VirtualServices(ns).Get(ctx, "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Http = weightedRoutes(svcHost, 0)
	updateSent := time.Now()
	cur, err = api.VirtualServices(ns).Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events.wait(t, config.Key{Kind: schema.VirtualService, Namespace: ns, Name: "echo"}, cur.ResourceVersion)
	inStore := time.Now()
	close(updated)
	wg.Wait()

	for i, r := range results {
		t.Logf("client %d during the shift: %d RPCs %v, %d errors; 200 v2 answers in a row from %v after the update call",
			i+1, r.rpcs, r.got.byName, len(r.got.errs), r.convergedAt.Sub(updateSent).Round(time.Millisecond))
		if len(r.got.errs) > 0 {
			t.Errorf("client %d: %d RPCs failed during the shift; first: %v", i+1, len(r.got.errs), r.got.errs[0])
		}
		if !r.converged {
			t.Errorf("client %d did not converge on v2 within %d RPCs / %v: %v", i+1, r.rpcs, kubeWaitTimeout, r.got.byName)
		}
	}
	for i, cc := range []*grpc.ClientConn{cc1, cc2} {
		if st := cc.GetState(); st != connectivity.Ready {
			t.Errorf("client %d channel state %v after the shift, want READY", i+1, st)
		}
	}
	for i, c := range []testpb.TestServiceClient{c1, c2} {
		for range 100 {
			if name, err := call(c); err != nil || name != "b" {
				t.Fatalf("client %d after the shift answered by %q (err %v), want b", i+1, name, err)
			}
		}
	}
	t.Logf("timings: cluster %v, server ready %v, config created and in the store %v, first RPC %v, %d RPCs %v, update in the store %v after the call",
		clusterUp.Sub(start).Round(time.Millisecond), serverUp.Sub(clusterUp).Round(time.Millisecond),
		configIn.Sub(serverUp).Round(time.Millisecond), firstRPC.Sub(configIn).Round(time.Millisecond),
		n, splitDone.Sub(firstRPC).Round(time.Millisecond), inStore.Sub(updateSent).Round(time.Millisecond))
}
