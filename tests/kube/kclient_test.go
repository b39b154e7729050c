package kube

import (
	"context"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// TestKClientAgainstTheAPIServer drives pilot-discovery's own clients
// (kclient, built without client-go's generated clientsets) against the
// real API server: a core kind read as protobuf, an Istio and a Gateway
// API custom resource as JSON, an informer, an Event and discovery.
func TestKClientAgainstTheAPIServer(t *testing.T) {
	c, ns := newCluster(t, "kclient")
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"},
			// As kubectl apply leaves it: a copy of the object it applied.
			Annotations: map[string]string{kclient.LastAppliedAnnotation: `{"apiVersion":"v1","kind":"Service"}`, "owner": "team-a"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := cs.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Service: %v", err)
	}
	got, err := cs.Kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.Spec.Ports[0].Port != 80 || got.Labels["app"] != "web" {
		t.Fatalf("get Service: %v, %+v", err, got)
	}

	f := kclient.NewKubeFactory(cs.Kube, 0, ns, func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	inf := f.Services()
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	if synced := f.WaitForCacheSync(stop); len(synced) != 1 {
		t.Fatalf("synced: %v", synced)
	}
	if _, err := cs.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 81}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listed, err := inf.Lister().Services(ns).List(labels.Everything())
	if err != nil || len(listed) != 1 || listed[0].Name != "web" {
		t.Fatalf("lister with selector app=web: %v, %d services", err, len(listed))
	}
	// The server keeps kubectl's copy; the cache does not.
	if got.Annotations[kclient.LastAppliedAnnotation] == "" {
		t.Fatalf("the API server dropped the last-applied annotation: %v", got.Annotations)
	}
	if a := listed[0].Annotations; len(a) != 1 || a["owner"] != "team-a" || listed[0].ManagedFields != nil {
		t.Errorf("cached Service has annotations %v and %d managedFields entries, want owner alone and none", a, len(listed[0].ManagedFields))
	}

	vs := &istionetworkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "vs", Namespace: ns},
		Spec:       networking.VirtualService{Hosts: []string{"web.example.com"}, Gateways: []string{"gw"}},
	}
	if _, err := cs.Istio.NetworkingV1().VirtualServices(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create VirtualService: %v", err)
	}
	vsl, err := cs.Istio.NetworkingV1().VirtualServices(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(vsl.Items) != 1 || vsl.Items[0].Spec.Hosts[0] != "web.example.com" {
		t.Fatalf("list VirtualServices: %v, %+v", err, vsl)
	}

	gc := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-class"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "wayfinder.io/gateway-controller"}}
	if _, err := cs.GatewayAPI.GatewayV1().GatewayClasses().Create(ctx, gc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create GatewayClass: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.GatewayAPI.GatewayV1().GatewayClasses().Delete(context.Background(), gc.Name, metav1.DeleteOptions{})
	})
	if g, err := cs.GatewayAPI.GatewayV1().GatewayClasses().Get(ctx, gc.Name, metav1.GetOptions{}); err != nil ||
		g.Spec.ControllerName != "wayfinder.io/gateway-controller" {
		t.Fatalf("get GatewayClass: %v, %+v", err, g)
	}

	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: ns, Name: "web"},
		Reason:         "Test", Message: "written through kclient.EventSink", Type: corev1.EventTypeNormal,
		FirstTimestamp: metav1.NewTime(time.Now()), LastTimestamp: metav1.NewTime(time.Now()), Count: 1,
	}
	if _, err := (kclient.EventSink{C: cs.Kube}).Create(ev); err != nil {
		t.Fatalf("event sink: %v", err)
	}
	if e, err := cs.Kube.CoreV1().Events(ns).Get(ctx, "web.1", metav1.GetOptions{}); err != nil || e.Reason != "Test" {
		t.Fatalf("get Event: %v, %+v", err, e)
	}

	for gv, kind := range map[string]string{"v1": "Service", "networking.istio.io/v1": "VirtualService", "gateway.networking.k8s.io/v1": "HTTPRoute"} {
		list, err := cs.Kube.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Kind == kind
		}
		if !found || list.GroupVersion != gv {
			t.Errorf("discovery of %s: %s not among %d resources (group version %q)", gv, kind, len(list.APIResources), list.GroupVersion)
		}
	}
	// The Gateway API source tells "not served yet" from a failure by
	// NotFound, as it did with client-go's discovery client.
	if _, err := cs.Kube.ServerResourcesForGroupVersion("nothing.example.com/v1"); !apierrors.IsNotFound(err) {
		t.Errorf("discovery of a group the server does not serve: %v, want NotFound", err)
	}
}
