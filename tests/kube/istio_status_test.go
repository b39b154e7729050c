package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// The status of Istio objects, read back from the API server: Reconciled
// once the gateway ACKs, the NACK count and error after it rejects a
// change, cleared after the fix, and a missing subset's message. The
// gateway connects on the plaintext port (--grpc-addr); status does not
// depend on how the gateway authenticated.
func TestIstioObjectStatus(t *testing.T) {
	c, ns := newCluster(t, "istio-status")
	e := clientEnv(t, c, ns)
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})

	// Every status write of VirtualService web, to check that none repeats
	// what the object already says.
	// A RetryWatcher, as a plain watch the API server ends would lose them.
	list, err := e.istio.NetworkingV1().VirtualServices(ns).List(ctx, metav1.ListOptions{})
	e.must(err)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "metadata.name=web"
			return e.istio.NetworkingV1().VirtualServices(ns).Watch(ctx, o)
		},
	})
	e.must(err)
	defer w.Stop()
	var (
		mu   sync.Mutex
		seen []*networkingv1.VirtualService
	)
	go func() {
		for ev := range w.ResultChan() {
			if vs, ok := ev.Object.(*networkingv1.VirtualService); ok && ev.Type == watch.Modified {
				mu.Lock()
				seen = append(seen, vs)
				mu.Unlock()
			}
		}
	}()

	e.createService("web")
	e.createGateway("gw")
	e.createVS(e.virtualService("web", "web.example.com", e.host("web"), ""))
	// The gateway rejects any route config naming nack.example.com.
	gw := serverenv.Gateway(t, e.server.GRPCAddr().String(), "gw-0", map[string]string{"istio": "ingressgateway"},
		func(typeURL string, rs []*anypb.Any) error {
			if typeURL != adsc.RouteType {
				return nil
			}
			for _, r := range rs {
				if bytes.Contains(r.GetValue(), []byte("nack.example.com")) {
					return errors.New("test gateway refuses nack.example.com")
				}
			}
			return nil
		})
	waitFor(t, gw, "web.example.com routed", func(s adsc.State) bool { return virtualHost(s, "web.example.com", "") })

	reconciled := func(s *metav1alpha1.IstioStatus) string {
		for _, c := range s.GetConditions() {
			if c.GetType() == status.ConditionReconciled {
				return c.GetStatus() + "/" + c.GetReason() + ": " + c.GetMessage()
			}
		}
		return ""
	}
	got := e.waitVSStatus("web", "Reconciled true", func(s *metav1alpha1.IstioStatus) bool {
		return strings.HasPrefix(reconciled(s), "True/Reconciled")
	})
	if cond := got.GetConditions()[0]; cond.GetObservedGeneration() != 1 || !strings.Contains(cond.GetMessage(), "all 1 gateways") {
		t.Errorf("Reconciled = %v, want generation 1 and one gateway", cond)
	}
	gwStatus := e.waitGatewayStatus("gw", func(s *metav1alpha1.IstioStatus) bool {
		return strings.HasPrefix(reconciled(s), "True/Reconciled")
	})
	if gwStatus.GetObservedGeneration() != 1 {
		t.Errorf("Gateway status observedGeneration = %d, want 1", gwStatus.GetObservedGeneration())
	}

	// A change the gateway NACKs.
	e.setVSHosts("web", "web.example.com", "nack.example.com")
	e.waitVSStatus("web", "Rejected with count and error", func(s *metav1alpha1.IstioStatus) bool {
		r := reconciled(s)
		return strings.HasPrefix(r, "False/Rejected") && strings.Contains(r, "1 of 1 gateways rejected") &&
			strings.Contains(r, "test gateway refuses nack.example.com") && s.GetObservedGeneration() == 2
	})

	// The fix, ACKed: the NACK is gone.
	e.setVSHosts("web", "web.example.com", "fixed.example.com")
	waitFor(t, gw, "fixed.example.com routed", func(s adsc.State) bool { return virtualHost(s, "fixed.example.com", "") })
	e.waitVSStatus("web", "Reconciled again", func(s *metav1alpha1.IstioStatus) bool {
		return strings.HasPrefix(reconciled(s), "True/Reconciled") && s.GetObservedGeneration() == 3
	})

	// Wait for the watch to deliver the final status.
	if poll.Wait(func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := len(seen)
		return n > 0 && seen[n-1].Generation == 3 && strings.HasPrefix(reconciled(&seen[n-1].Status), "True/Reconciled")
	}, poll.Timeout(waitTimeout), poll.Interval(20*time.Millisecond)) != nil {
		mu.Lock()
		for _, vs := range seen {
			t.Logf("seen: generation %d resourceVersion %s %s", vs.Generation, vs.ResourceVersion, reconciled(&vs.Status))
		}
		mu.Unlock()
		t.Fatal("the watch never delivered the final status of web")
	}
	mu.Lock()
	written := slices.Clone(seen)
	mu.Unlock()
	writes := 0
	for i := 1; i < len(written); i++ {
		prev, cur := written[i-1], written[i]
		if prev.Generation != cur.Generation {
			continue // a spec change
		}
		writes++
		if sameIgnoringTimes(&prev.Status, &cur.Status) {
			t.Errorf("status write %d repeats the status before it: %v", i, &cur.Status)
		}
	}
	if writes < 3 {
		t.Errorf("saw %d status writes of web, want at least Reconciled, Rejected, Reconciled", writes)
	}
	// Each spec version is typically written Pending, then Reconciled
	// or Rejected once the gateway answers.
	t.Logf("VirtualService web: %d status writes for 3 spec versions", writes)

	// A DestinationRule feeds every gateway's clusters: Reconciled once
	// the gateway ACKs them.
	_, err = e.istio.NetworkingV1().DestinationRules(ns).Create(ctx, &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: networking.DestinationRule{Host: e.host("web"), Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}}}},
	}, metav1.CreateOptions{})
	e.must(err)
	poll.Seen(t, "DestinationRule web Reconciled", func() (string, bool) {
		dr, err := e.istio.NetworkingV1().DestinationRules(ns).Get(ctx, "web", metav1.GetOptions{})
		e.must(err)
		return fmt.Sprint(&dr.Status), strings.HasPrefix(reconciled(&dr.Status), "True/Reconciled") && strings.Contains(reconciled(&dr.Status), "all 1 gateways")
	}, apiPoll...)

	// A route to a subset no DestinationRule defines.
	e.createVS(e.virtualService("sub", "sub.example.com", e.host("web"), "v9"))
	sub := e.waitVSStatus("sub", "IST0101 for the missing subset", func(s *metav1alpha1.IstioStatus) bool {
		for _, m := range s.GetValidationMessages() {
			if m.GetType().GetCode() == "IST0101" {
				return true
			}
		}
		return false
	})
	for _, c := range sub.GetConditions() {
		if c.GetType() == status.ConditionValid && (c.GetStatus() != "False" || !strings.Contains(c.GetMessage(), "destination.subset") ||
			!strings.Contains(c.GetMessage(), `"v9"`)) {
			t.Errorf("Valid of sub = %v, want False naming the field and the subset", c)
		}
	}
}

func (e *env) setVSHosts(name string, hosts ...string) {
	e.t.Helper()
	e.update(func() error {
		vs, err := e.istio.NetworkingV1().VirtualServices(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		vs.Spec.Hosts = hosts
		_, err = e.istio.NetworkingV1().VirtualServices(e.ns).Update(ctx, vs, metav1.UpdateOptions{})
		return err
	})
}

// waitVSStatus polls the VirtualService until cond holds on its status
// (bounded by waitTimeout) and returns that status.
func (e *env) waitVSStatus(name, what string, cond func(*metav1alpha1.IstioStatus) bool) *metav1alpha1.IstioStatus {
	e.t.Helper()
	var last *metav1alpha1.IstioStatus
	poll.Seen(e.t, "VirtualService "+name+": "+what, func() (string, bool) {
		vs, err := e.istio.NetworkingV1().VirtualServices(e.ns).Get(ctx, name, metav1.GetOptions{})
		e.must(err)
		last = &vs.Status
		return fmt.Sprint(last), cond(last)
	}, apiPoll...)
	return last
}

func (e *env) waitGatewayStatus(name string, cond func(*metav1alpha1.IstioStatus) bool) *metav1alpha1.IstioStatus {
	e.t.Helper()
	var last *metav1alpha1.IstioStatus
	poll.Seen(e.t, "Gateway "+name+" status", func() (string, bool) {
		gw, err := e.istio.NetworkingV1().Gateways(e.ns).Get(ctx, name, metav1.GetOptions{})
		e.must(err)
		last = &gw.Status
		return fmt.Sprint(last), cond(last)
	}, apiPoll...)
	return last
}

func sameIgnoringTimes(a, b *metav1alpha1.IstioStatus) bool {
	strip := func(s *metav1alpha1.IstioStatus) *metav1alpha1.IstioStatus {
		s = proto.Clone(s).(*metav1alpha1.IstioStatus)
		for _, c := range s.Conditions {
			c.LastTransitionTime, c.LastProbeTime = nil, nil
		}
		return s
	}
	return proto.Equal(strip(a), strip(b))
}
