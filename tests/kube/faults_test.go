package kube

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/anypb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// outage is how long TestAPIServerOutageKeepsServing keeps the API server
// down: short in `make test`; `go test ./tests/kube -run Outage -outage 1m`
// is the one-minute form the README's figure comes from.
var outage = flag.Duration("outage", 15*time.Second, "how long the API server outage of TestAPIServerOutageKeepsServing lasts")

// recoveryBound is how soon after the API server is back a change must
// reach the gateways.
const recoveryBound = 5 * time.Second

// watcher is a gateway that checks every response it is sent, before
// applying it, against what must never be lost: route configuration
// http.80 holding every host of hosts, the cluster present, and the
// cluster's endpoints not empty. A response that lacks any of them is a
// push of an empty or partial view; it is recorded (and still applied, as
// Envoy would).
type watcher struct {
	*adsc.Client
	mu     sync.Mutex
	lost   []string
	hosts  []string
	remote string // cluster name
}

func (e *env) watchingGateway(pod, cluster string, hosts ...string) *watcher {
	e.t.Helper()
	w := &watcher{hosts: hosts, remote: cluster}
	w.Client = serverenv.Gateway(e.t, e.server.GRPCAddr().String(), pod, map[string]string{"istio": "ingressgateway"}, w.check)
	return w
}

func (w *watcher) check(typeURL string, resources []*anypb.Any) error {
	var problems []string
	switch typeURL {
	case adsc.RouteType:
		for _, a := range resources {
			rc := &routev3.RouteConfiguration{}
			if a.UnmarshalTo(rc) != nil || rc.GetName() != "http.80" {
				continue
			}
			for _, h := range w.hosts {
				if !slices.ContainsFunc(rc.GetVirtualHosts(), func(vh *routev3.VirtualHost) bool { return vh.GetName() == h+":80" }) {
					problems = append(problems, fmt.Sprintf("RDS http.80 without %s", h))
				}
			}
		}
	case adsc.ClusterType:
		found := false
		for _, a := range resources {
			c := &clusterv3.Cluster{}
			if a.UnmarshalTo(c) == nil && c.GetName() == w.remote {
				found = true
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("CDS without %s (%d clusters)", w.remote, len(resources)))
		}
	case adsc.EndpointType:
		for _, a := range resources {
			cla := &endpointv3.ClusterLoadAssignment{}
			if a.UnmarshalTo(cla) == nil && cla.GetClusterName() == w.remote && len(cla.GetEndpoints()) == 0 {
				problems = append(problems, fmt.Sprintf("EDS %s empty", w.remote))
			}
		}
	}
	if len(problems) > 0 {
		w.mu.Lock()
		w.lost = append(w.lost, problems...)
		w.mu.Unlock()
	}
	return nil
}

// losses are the problems seen so far.
func (w *watcher) losses() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lost)
}

// acks counts the responses accepted per type.
func acks(s adsc.State) map[string]int {
	out := map[string]int{}
	for typ, ts := range s.Types {
		out[adsc.ShortName(typ)] = ts.ACKs
	}
	return out
}

// The API server goes away for -outage (default 15 s): the gateways keep
// their config and are sent nothing, the server stays ready, a gateway
// connecting during the outage gets the last good config, and once the API server is back a change
// reaches the gateways within recoveryBound, after the informers resume.
// No response at any point lacks what was configured before the outage.
func TestAPIServerOutageKeepsServing(t *testing.T) {
	e := newEnv(t, "outage")
	host := e.host("reviews")
	cluster := model.ClusterName(9080, "", host)
	gw := e.watchingGateway("gw-0", cluster, "a.example.com", "b.example.com")
	e.createGateway("gw")
	e.createVS(e.virtualService("a", "a.example.com", host, ""))
	e.createVS(e.virtualService("b", "b.example.com", host, ""))
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.4.0.1", "", true}, ep{"10.4.0.2", "", true})
	before := waitFor(t, gw.Client, "initial config", func(s adsc.State) bool {
		return virtualHost(s, "a.example.com", cluster) && virtualHost(s, "b.example.com", cluster) && endpointCount(s, cluster) == 2
	})
	// Responses before the config was complete are not losses.
	gw.mu.Lock()
	gw.lost = nil
	gw.mu.Unlock()

	e.c.StopAPIServer()
	stopped := time.Now()
	t.Logf("API server stopped for %v", *outage)
	// A gateway that connects during the outage gets the last good config.
	late := e.watchingGateway("gw-late", cluster, "a.example.com", "b.example.com")
	waitFor(t, late.Client, "config for a gateway connecting during the outage", func(s adsc.State) bool {
		return virtualHost(s, "a.example.com", cluster) && virtualHost(s, "b.example.com", cluster) && endpointCount(s, cluster) == 2
	})
	select {
	case <-gw.Done():
		t.Fatalf("gateway stream ended during the outage: %v", gw.Err())
	case <-time.After(time.Until(stopped.Add(*outage))):
	}
	// Still ready: a readiness probe failing now would take every replica
	// out of its Service and disconnect the gateways.
	resp, err := http.Get("http://" + e.server.HTTPAddr().String() + "/healthz/ready")
	e.must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz/ready during the outage: %d, want 200", resp.StatusCode)
	}
	if got, want := acks(gw.State()), acks(before); !maps.Equal(got, want) {
		t.Errorf("gateway was sent config during the outage: ACKs %v, before %v", got, want)
	}

	e.c.StartAPIServer(t)
	back := time.Now()
	e.createVS(e.virtualService("c", "c.example.com", host, ""))
	waitFor(t, gw.Client, "a change made after the outage", func(s adsc.State) bool {
		return virtualHost(s, "c.example.com", cluster)
	})
	took := time.Since(back)
	t.Logf("outage %v: a change made once the API server was back reached the gateway in %v", *outage, took.Round(10*time.Millisecond))
	if took > recoveryBound {
		t.Errorf("a change after the outage took %v to reach the gateway; want under %v", took, recoveryBound)
	}
	s := waitFor(t, late.Client, "the change on the late gateway", func(s adsc.State) bool { return virtualHost(s, "c.example.com", cluster) })
	if !virtualHost(s, "a.example.com", cluster) || !virtualHost(s, "b.example.com", cluster) || endpointCount(s, cluster) != 2 {
		t.Errorf("late gateway lost config: %s", describe(s))
	}
	for _, w := range []*watcher{gw, late} {
		if l := w.losses(); len(l) > 0 {
			t.Errorf("a gateway was pushed an empty or partial view: %v", l)
		}
	}
}

// Changes are written into etcd while the API server is down, and etcd is
// compacted past every resourceVersion the control plane has seen: once
// the API server is back, resuming a watch fails with 410 Gone (checked
// here), so the informers must list again. Nothing is lost (the new and
// the changed VirtualService both arrive) and no response in between
// lacks what was there before.
func TestWatchExpiredRelistsWithoutLoss(t *testing.T) {
	e := newEnv(t, "expired")
	host := e.host("reviews")
	cluster := model.ClusterName(9080, "", host)
	gw := e.watchingGateway("gw-0", cluster, "a.example.com", "b.example.com")
	e.createGateway("gw")
	e.createVS(e.virtualService("a", "a.example.com", host, ""))
	e.createVS(e.virtualService("b", "b.example.com", host, ""))
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.5.0.1", "", true})
	waitFor(t, gw.Client, "initial config", func(s adsc.State) bool {
		return virtualHost(s, "a.example.com", cluster) && virtualHost(s, "b.example.com", cluster) && endpointCount(s, cluster) == 1
	})
	gw.mu.Lock()
	gw.lost = nil
	gw.mu.Unlock()
	seen, err := e.istio.NetworkingV1().VirtualServices(e.ns).Get(ctx, "b", metav1.GetOptions{})
	e.must(err)

	e.c.StopAPIServer()
	// While it is down: VirtualService c is added and b gets a second
	// host, straight in etcd (custom resources are stored as JSON).
	keyA := apiserver.EtcdKey("networking.istio.io", "virtualservices", e.ns, "a")
	keyB := apiserver.EtcdKey("networking.istio.io", "virtualservices", e.ns, "b")
	raw, _ := e.c.EtcdGet(t, keyA)
	c := editJSON(t, raw, func(o map[string]any) {
		meta := o["metadata"].(map[string]any)
		meta["name"] = "c"
		meta["uid"] = "7d1e6c3a-0000-4000-8000-00000000000c"
		delete(meta, "managedFields")
		o["spec"].(map[string]any)["hosts"] = []any{"c.example.com"}
	})
	e.c.EtcdPut(t, apiserver.EtcdKey("networking.istio.io", "virtualservices", e.ns, "c"), c)
	raw, _ = e.c.EtcdGet(t, keyB)
	b := editJSON(t, raw, func(o map[string]any) {
		o["spec"].(map[string]any)["hosts"] = []any{"b.example.com", "b2.example.com"}
	})
	rev := e.c.EtcdPut(t, keyB, b)
	e.c.EtcdCompact(t, rev)
	t.Logf("etcd compacted at revision %d; the control plane last saw VirtualService b at %s", rev, seen.ResourceVersion)

	e.c.StartAPIServer(t)
	back := time.Now()
	// The proof that this is the 410 path: a watch from what the control
	// plane had seen is refused as expired.
	wctx, cancel := contextWithTimeout()
	defer cancel()
	w, err := e.istio.NetworkingV1().VirtualServices(e.ns).Watch(wctx, metav1.ListOptions{ResourceVersion: seen.ResourceVersion})
	if err != nil && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from resourceVersion %s: %v", seen.ResourceVersion, err)
	}
	if err == nil {
		ev := <-w.ResultChan()
		w.Stop()
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != http.StatusGone {
			t.Fatalf("watch from resourceVersion %s after compaction: %s %v; want 410 Gone", seen.ResourceVersion, ev.Type, ev.Object)
		}
	}

	s := waitFor(t, gw.Client, "the changes made while the control plane could not watch", func(s adsc.State) bool {
		return virtualHost(s, "c.example.com", cluster) && virtualHost(s, "b2.example.com", cluster)
	})
	t.Logf("after the 410, the relisted changes reached the gateway %v after the API server was back", time.Since(back).Round(10*time.Millisecond))
	if !virtualHost(s, "a.example.com", cluster) || !virtualHost(s, "b.example.com", cluster) || endpointCount(s, cluster) != 1 {
		t.Errorf("config lost after the relist: %s", describe(s))
	}
	if l := gw.losses(); len(l) > 0 {
		t.Errorf("the gateway was pushed an empty or partial view: %v", l)
	}
	// And the watch works again: a change through the API arrives.
	e.createVS(e.virtualService("d", "d.example.com", host, ""))
	waitFor(t, gw.Client, "a change after the relist", func(s adsc.State) bool { return virtualHost(s, "d.example.com", cluster) })
}

// editJSON decodes a stored object, lets edit change it and encodes it.
func editJSON(t *testing.T, raw []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("stored object is not JSON: %v: %.200s", err, raw)
	}
	edit(o)
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
