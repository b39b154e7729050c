package gatewayapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	kubegatewayapi "github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// serve makes the fake API server serve these gateway.networking.k8s.io/v1
// resources.
func serve(kube *fake.Clientset, resources ...string) {
	list := &metav1.APIResourceList{GroupVersion: gw.GroupVersion.String()}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Namespaced: r != "gatewayclasses"})
	}
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{list}
}

// startController runs a controller and its queue; events of both kinds
// arrive on the returned channel as "add Gateway ns/name".
func startController(t *testing.T, kube *fake.Clientset, client *gwfake.Clientset) (*kubegatewayapi.Controller, chan string) {
	t.Helper()
	return runController(t, kubegatewayapi.ControllerOptions{Client: kclienttest.GatewayAPI(client), Kube: kclienttest.Kube(kube)})
}

// runController is startController with opts (its own queue).
func runController(t *testing.T, opts kubegatewayapi.ControllerOptions) (*kubegatewayapi.Controller, chan string) {
	t.Helper()
	q := queue.New(queue.Options{})
	opts.Queue = q
	c, err := kubegatewayapi.NewController(opts)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 100)
	h := func(_, cur config.Config, ev model.Event) {
		events <- ev.String() + " " + cur.Kind.String() + " " + cur.Namespace + "/" + cur.Name
	}
	c.RegisterEventHandler(schema.Gateway, h)
	c.RegisterEventHandler(schema.VirtualService, h)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(ctx) })
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-c.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced within 10s")
	}
	return c, events
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

var (
	class = &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "wayfinder"}, Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}
	edge  = &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
	}}
	webService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
)

// newClient holds class, edge and routes. The fake is the simple one,
// objects created through the typed client: NewClientset's type converter
// does not know v1 Gateways, and its tracker files objects given to it
// under v1beta1, which shares the Go types.
func newClient(t *testing.T, routes ...*gw.HTTPRoute) *gwfake.Clientset {
	t.Helper()
	ctx := context.Background()
	client := gwfake.NewSimpleClientset() //nolint:staticcheck // see above
	if _, err := client.GatewayV1().GatewayClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.GatewayV1().Gateways(edge.Namespace).Create(ctx, edge, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if _, err := client.GatewayV1().HTTPRoutes(r.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return client
}

func routeTo(name, service string) *gw.HTTPRoute {
	port := gw.PortNumber(8080)
	return &gw.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: name}, Spec: gw.HTTPRouteSpec{
		CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
		Hostnames:       []gw.Hostname{gw.Hostname(name + ".example.com")},
		Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
			BackendObjectReference: gw.BackendObjectReference{Name: gw.ObjectName(service), Port: &port}}}}}},
	}}
}

// The controller follows Gateways and HTTPRoutes: what it converts reaches
// the handlers, and a route deleted removes its VirtualService; a refused
// backend shows in ConfigErrors.
func TestControllerFollowsGatewayAPI(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(webService)
	serve(kube, "gatewayclasses", "gateways", "httproutes", "referencegrants")
	client := newClient(t, routeTo("shop", "web"))
	c, events := startController(t, kube, client)
	expect(t, events, "add Gateway edge-ns/edge-http-gwapi", "add VirtualService edge-ns/edge-http-shop-example-com-gwapi")

	if _, err := client.GatewayV1().HTTPRoutes("edge-ns").Create(ctx, routeTo("blog", "missing"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "add VirtualService edge-ns/edge-http-blog-example-com-gwapi")
	errs := c.ConfigErrors()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "HTTPRoute edge-ns/blog: spec.rules[0].backendRefs[0]: Service edge-ns/missing does not exist") {
		t.Errorf("config errors %v", errs)
	}
	if err := client.GatewayV1().HTTPRoutes("edge-ns").Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, events, "delete VirtualService edge-ns/edge-http-shop-example-com-gwapi")
	if n := len(c.List(schema.VirtualService, "")); n != 1 {
		t.Errorf("%d VirtualServices stored, want 1", n)
	}
}

// Without the Gateway API CRDs the controller syncs at once, empty; with
// only some installed it watches those.
func TestControllerWithoutCRDs(t *testing.T) {
	kube := fake.NewClientset()
	c, _ := startController(t, kube, newClient(t))
	if !c.HasSynced() || len(c.List(schema.Gateway, "")) != 0 {
		t.Errorf("synced %v with %d gateways, want synced and none", c.HasSynced(), len(c.List(schema.Gateway, "")))
	}

	kube = fake.NewClientset(webService)
	serve(kube, "gatewayclasses", "gateways", "httproutes") // no ReferenceGrant CRD
	_, events := startController(t, kube, newClient(t, routeTo("shop", "web")))
	expect(t, events, "add Gateway edge-ns/edge-http-gwapi", "add VirtualService edge-ns/edge-http-shop-example-com-gwapi")
}
