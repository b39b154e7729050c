package gatewayapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	filegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/file/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

func objects() []metav1.Object {
	port := gw.PortNumber(8080)
	return []metav1.Object{
		&gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}},
		&gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"}, Spec: gw.GatewaySpec{
			GatewayClassName: "wayfinder",
			Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
		}},
		&gw.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "shop"}, Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"shop.example.com"},
			Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
				BackendObjectReference: gw.BackendObjectReference{Name: "missing", Port: &port}}}}}},
		}},
	}
}

// A StaticSource converts what Input reads on Run and again on every
// Schedule, tells its handlers on the queue, keeps the computed status,
// and names the file of an object that is not fully converted.
func TestStaticSourceConvertsOnSchedule(t *testing.T) {
	var mu sync.Mutex
	objs := objects()
	q := queue.New(queue.Options{})
	s, err := filegatewayapi.NewStaticSource(filegatewayapi.StaticOptions{
		Input: func() (gatewayapi.Input, error) {
			mu.Lock()
			defer mu.Unlock()
			return gatewayapi.InputOf(objs), nil
		},
		Locate: func(object string) string {
			if object == "HTTPRoute edge-ns/shop" {
				return "routes.yaml (document 2)"
			}
			return ""
		},
		Queue: q,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 100)
	h := func(_, cur config.Config, ev model.Event) {
		events <- ev.String() + " " + cur.Kind.String() + " " + cur.Namespace + "/" + cur.Name
	}
	s.RegisterEventHandler(schema.Gateway, h)
	s.RegisterEventHandler(schema.VirtualService, h)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(ctx) })
	wg.Go(func() { s.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	expect(t, events, "add Gateway edge-ns/edge-http-gwapi", "add VirtualService edge-ns/edge-http-shop-example-com-gwapi")
	if _, ok := s.Status().Gateways[types.NamespacedName{Namespace: "edge-ns", Name: "edge"}]; !ok {
		t.Errorf("status %+v has no Gateway edge-ns/edge", s.Status().Gateways)
	}
	var located bool
	for _, e := range s.ConfigErrors() {
		if e.Source == "routes.yaml (document 2)" && strings.HasSuffix(e.Message, " (HTTPRoute edge-ns/shop)") {
			located = true
		}
	}
	if !located {
		t.Errorf("errors %v: none located in routes.yaml (document 2)", s.ConfigErrors())
	}

	mu.Lock()
	objs = objs[:2] // the route is gone
	mu.Unlock()
	s.Schedule()
	expect(t, events, "delete VirtualService edge-ns/edge-http-shop-example-com-gwapi")
	if errs := s.ConfigErrors(); len(errs) != 0 {
		t.Errorf("errors after the route left: %v", errs)
	}
}

// ServicesFromEntries finds Service NAME of NS in a ServiceEntry with host
// NAME.NS.svc.SUFFIX, preferring an entry of NS, with that entry's ports.
func TestServicesFromEntries(t *testing.T) {
	entry := func(ns, name string, port uint32) config.Config {
		return config.Config{Meta: config.Meta{Kind: schema.ServiceEntry, Namespace: ns, Name: name},
			Spec: &networking.ServiceEntry{Hosts: []string{"web.shop.svc.example.internal"},
				Ports: []*networking.ServicePort{{Name: "http", Number: port, Protocol: "HTTP"}}}}
	}
	store := memory.New([]config.Config{entry("aaa", "first-by-name", 1), entry("shop", "own", 2)})
	services := filegatewayapi.ServicesFromEntries(store, "example.internal")
	svc := services("shop", "web")
	if svc == nil || svc.Namespace != "shop" || svc.Name != "web" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 2 {
		t.Errorf("Service shop/web: %+v, want the ports of shop's entry (2)", svc)
	}
	if svc := services("other", "web"); svc != nil {
		t.Errorf("Service other/web: %+v, want none", svc)
	}
}

func expect(t *testing.T, events chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case e := <-events:
			if e != w {
				t.Fatalf("event %q, want %q", e, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %q within 10s", w)
		}
	}
}
