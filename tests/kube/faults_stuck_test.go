package kube

import (
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/limits"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/heap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// In Kubernetes mode, gateways that stop reading do not delay a change
// reaching a good gateway; at their send deadline they are closed and
// counted, and the heap returns near where it was.
func TestStuckGatewaysInKubernetesMode(t *testing.T) {
	const stuck = 100
	const sendTimeout = 5 * time.Second
	e := newEnvWith(t, "stuck", bootstrap.Options{Logger: serverenv.Logger(t, slog.LevelWarn),
		Limits: bootstrap.Limits{XDS: limits.Options{SendTimeout: sendTimeout}}})
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

	base := heap.AfterGC()
	for i := range stuck {
		serverenv.NeverReadingGateway(t, e.server.GRPCAddr().String(), "stuck-"+strconv.Itoa(i))
	}
	// Every stuck stream opened: connected still, or already closed at its
	// deadline (on a slow machine the first reach it before the last
	// connect).
	poll.Until(t, "every stuck gateway connected", func() bool {
		return e.metric("pilot_xds")+e.metric("pilot_xds_write_timeout") >= stuck+1
	}, apiPoll...)

	// What the stuck gateways hold is their blocked responses, which are
	// shared, not copied per stream.
	during := heap.AfterGC()
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
	poll.Until(t, "stuck gateways closed at their send deadline", func() bool { return e.metric("pilot_xds_write_timeout") >= stuck }, apiPoll...)
	poll.Until(t, "only the good gateway connected", func() bool { return e.metric("pilot_xds") == 1 }, apiPoll...)
	e.createVS(e.virtualService("c", "c.example.com", host, ""))
	waitFor(t, good, "a later change", func(s adsc.State) bool { return virtualHost(s, "c.example.com", cluster) })

	after := heap.AfterGC()
	t.Logf("heap %d MiB before the stuck gateways, %d MiB after they were closed", base>>20, after>>20)
	if after > base+64<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB after the stuck gateways were closed", base>>20, after>>20)
	}
}
