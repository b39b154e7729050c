package kube

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/tests/testenv"
)

// newEnvWith is newEnv with server options.
func newEnvWith(t *testing.T, prefix string, opts bootstrap.Options) *env {
	t.Helper()
	c, ns := newCluster(t, prefix)
	e := &env{t: t, c: c, ns: ns, kube: c.Clientset()}
	var err error
	if e.istio, err = istioclient.NewForConfig(c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	opts.Kubeconfig, opts.WatchNamespaces = c.Kubeconfig, []string{ns}
	e.server = startServer(t, opts)
	return e
}

func heapAfterGC() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// In Kubernetes mode, gateways that stop reading do not delay a change
// reaching a good gateway; at their send deadline they are closed and
// counted, and the heap returns near where it was.
func TestStuckGatewaysInKubernetesMode(t *testing.T) {
	const stuck = 100
	const sendTimeout = 5 * time.Second
	e := newEnvWith(t, "stuck", bootstrap.Options{Logger: testenv.Logger(t, slog.LevelWarn),
		Limits: bootstrap.Limits{XDS: xds.Limits{SendTimeout: sendTimeout}}})
	host := e.host("reviews")
	cluster := model.ClusterName(9080, "", host)
	e.createGateway("gw")
	e.createVS(e.virtualService("a", "a.example.com", host, ""))
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.6.0.1", "", true})
	// 2,000 clusters from eight ServiceEntries: a CDS response many times a
	// stream's 64 KiB window.
	for i := range 8 {
		se := &networkingv1.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: fmt.Sprintf("bulk-%d", i)},
			Spec: networking.ServiceEntry{Location: networking.ServiceEntry_MESH_INTERNAL, Resolution: networking.ServiceEntry_STATIC,
				Ports:     []*networking.ServicePort{{Number: 8080, Name: "http", Protocol: "HTTP"}},
				Endpoints: []*networking.WorkloadEntry{{Address: "10.6.1.1"}}}}
		for j := range 250 {
			se.Spec.Hosts = append(se.Spec.Hosts, fmt.Sprintf("bulk-%d-%d.example.internal", i, j))
		}
		_, err := e.istio.NetworkingV1().ServiceEntries(e.ns).Create(ctx, se, metav1.CreateOptions{})
		e.must(err)
	}
	good := e.gateway("good-0")
	waitFor(t, good, "initial config", func(s adsc.State) bool {
		return virtualHost(s, "a.example.com", cluster) && len(s.Clusters) > 2000
	})

	base := heapAfterGC()
	for i := range stuck {
		testenv.NeverReadingGateway(t, e.server.GRPCAddr().String(), "stuck-"+strconv.Itoa(i))
	}
	// Every stuck stream opened: connected still, or already closed at its
	// deadline (on a slow machine the first reach it before the last
	// connect).
	waitUntil(t, "every stuck gateway connected", func() bool {
		return e.metric("pilot_xds")+e.metric("pilot_xds_write_timeout") >= stuck+1
	})

	// What the stuck gateways hold is their blocked responses, which are
	// shared, not copied per stream.
	during := heapAfterGC()
	t.Logf("heap %d MiB with %d gateways not reading", during>>20, stuck)
	if during > base+128<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB with %d gateways not reading", base>>20, during>>20, stuck)
	}

	start := time.Now()
	e.createVS(e.virtualService("b", "b.example.com", host, ""))
	waitFor(t, good, "a change", func(s adsc.State) bool { return virtualHost(s, "b.example.com", cluster) })
	took := time.Since(start)
	t.Logf("a change reached the good gateway in %v with %d never-reading gateways", took.Round(time.Millisecond), stuck)
	if took >= sendTimeout {
		t.Errorf("the change took %v, past the stuck gateways' send deadline (%v): they delayed it", took, sendTimeout)
	}
	waitUntil(t, "stuck gateways closed at their send deadline", func() bool { return e.metric("pilot_xds_write_timeout") >= stuck })
	waitUntil(t, "only the good gateway connected", func() bool { return e.metric("pilot_xds") == 1 })
	e.createVS(e.virtualService("c", "c.example.com", host, ""))
	waitFor(t, good, "a later change", func(s adsc.State) bool { return virtualHost(s, "c.example.com", cluster) })

	after := heapAfterGC()
	t.Logf("heap %d MiB before the stuck gateways, %d MiB after they were closed", base>>20, after>>20)
	if after > base+64<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB after the stuck gateways were closed", base>>20, after>>20)
	}
}
