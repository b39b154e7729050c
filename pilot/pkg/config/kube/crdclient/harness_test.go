package crdclient

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/test/logbuf"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every wait; events normally arrive in milliseconds.
const timeout = 20 * time.Second

// delivered is one handler call.
type delivered struct {
	old, cur config.Config
	ev       model.Event
}

// env is one controller over a fake clientset, with a handler on every kind.
type env struct {
	t         *testing.T
	client    *istiofake.Clientset
	c         *Controller
	rec       *record.FakeRecorder
	logs      *logbuf.Buffer
	events    chan delivered
	sentinels int
	cancel    context.CancelFunc
	done      chan struct{}
}

func newEnv(t *testing.T, tweak func(*Options, *istiofake.Clientset), objs ...any) *env {
	t.Helper()
	e := &env{t: t, rec: record.NewFakeRecorder(100), logs: &logbuf.Buffer{}, events: make(chan delivered, 1000)}
	e.client = istiofake.NewSimpleClientset()
	for _, o := range objs {
		e.create(o)
	}
	opts := Options{
		Client:   kclienttest.Istio(e.client),
		Logger:   slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Recorder: e.rec,
		validate: objects.ValidateByLabel,
	}
	if tweak != nil {
		tweak(&opts, e.client)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	for _, k := range schema.Kinds() {
		c.RegisterEventHandler(k, func(old, cur config.Config, ev model.Event) {
			e.events <- delivered{old: old, cur: cur, ev: ev}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() { defer close(e.done); c.Run(ctx) }()
	t.Cleanup(e.stop)
	return e
}

func (e *env) stop() {
	e.cancel()
	<-e.done
}

// waitSynced waits for the first sync to be delivered.
func (e *env) waitSynced() {
	e.t.Helper()
	select {
	case <-e.c.Synced():
	case <-time.After(timeout):
		e.t.Fatalf("not synced after %v; logs:\n%s", timeout, e.logs.String())
	}
	if !e.c.HasSynced() {
		e.t.Fatal("Synced closed but HasSynced is false")
	}
}

// barrier waits until every task queued so far has run.
func (e *env) barrier() {
	e.t.Helper()
	ch := make(chan struct{})
	e.c.queue.Push(func() error { close(ch); return nil })
	select {
	case <-ch:
	case <-time.After(timeout):
		e.t.Fatal("queue did not drain")
	}
}

// next returns the next handler call.
func (e *env) next() delivered {
	e.t.Helper()
	select {
	case d := <-e.events:
		return d
	case <-time.After(timeout):
		e.t.Fatalf("no event within %v; logs:\n%s", timeout, e.logs.String())
	}
	return delivered{}
}

// none asserts no handler call is pending once the queue has drained.
func (e *env) none() {
	e.t.Helper()
	e.barrier()
	select {
	case d := <-e.events:
		e.t.Fatalf("unexpected %s of %s", d.ev, d.cur.Key())
	default:
	}
}

// sentinel proves that the VirtualService changes made before it caused
// no handler call: it creates a fresh VirtualService, which travels the
// same informer and queue, and fails if anything else is delivered first.
func (e *env) sentinel() {
	e.t.Helper()
	e.sentinels++
	name := fmt.Sprintf("sentinel-%d", e.sentinels)
	e.create(vs("sentinel", name, name+".example.com"))
	if d := e.next(); d.ev != model.EventAdd || d.cur.Name != name {
		e.t.Fatalf("got %s of %s before the sentinel", d.ev, d.cur.Key())
	}
}

func (e *env) create(o any) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	switch o := o.(type) {
	case *networkingv1.Gateway:
		_, err = e.client.NetworkingV1().Gateways(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *networkingv1.VirtualService:
		_, err = e.client.NetworkingV1().VirtualServices(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *networkingv1.DestinationRule:
		_, err = e.client.NetworkingV1().DestinationRules(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *networkingv1.ServiceEntry:
		_, err = e.client.NetworkingV1().ServiceEntries(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		e.t.Fatalf("create: unexpected %T", o)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) updateVS(o *networkingv1.VirtualService) {
	e.t.Helper()
	if _, err := e.client.NetworkingV1().VirtualServices(o.Namespace).Update(context.Background(), o, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deleteVS(ns, name string) {
	e.t.Helper()
	if err := e.client.NetworkingV1().VirtualServices(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func vs(ns, name string, hosts ...string) *networkingv1.VirtualService {
	return &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networking.VirtualService{Hosts: hosts, Gateways: []string{"gw"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews"}}},
		}}},
	}
}

func gw(ns, name string) *networkingv1.Gateway {
	return &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{{
			Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*"},
		}}},
	}
}

func dr(ns, name, host string) *networkingv1.DestinationRule {
	return &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}},
	}
}

func se(ns, name, host string) *networkingv1.ServiceEntry {
	return &networkingv1.ServiceEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networking.ServiceEntry{Hosts: []string{host}, Resolution: networking.ServiceEntry_DNS,
			Ports: []*networking.ServicePort{{Number: 443, Name: "tls", Protocol: "TLS"}}},
	}
}
