package kube

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
)

// ingressWriter runs one replica's status writer as the restricted
// (least-privilege) user, watching only ns.
type ingressWriter struct {
	w    *status.Writer
	stop func()
}

func startIngressWriter(t *testing.T, c *apiserver.Cluster, ns, identity, class string) *ingressWriter {
	t.Helper()
	cs, err := kclient.New(c.RestrictedRESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	w, err := status.New(status.Options{
		Client: cs.Kube, Namespaces: []string{ns},
		Ingress:          ingress.Options{IngressClass: class},
		ServiceNamespace: ns, ServiceName: "istio-ingressgateway",
		LeaseNamespace: ns, Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	iw := &ingressWriter{w: w}
	var stopped bool
	iw.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Run: %v", identity, err)
		}
	}
	t.Cleanup(iw.stop)
	return iw
}

// waitIngressStatus watches the Ingress until its load balancer status is want.
func waitIngressStatus(t *testing.T, cs kubernetes.Interface, ns, name string, want []networkingv1.IngressLoadBalancerIngress) *networkingv1.Ingress {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := cs.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 1 && reflect.DeepEqual(list.Items[0].Status.LoadBalancer.Ingress, want) {
		return &list.Items[0]
	}
	watch, err := cs.NetworkingV1().Ingresses(ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	var last any
	for ev := range watch.ResultChan() {
		if ing, ok := ev.Object.(*networkingv1.Ingress); ok {
			last = ing.Status.LoadBalancer.Ingress
			if reflect.DeepEqual(ing.Status.LoadBalancer.Ingress, want) {
				return ing
			}
		}
	}
	t.Fatalf("Ingress %s/%s: status never became %v (last %v)", ns, name, want, last)
	return nil
}

func newStatusIngress(ns, name string, class *string, annotations map[string]string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: networkingv1.IngressSpec{
			IngressClassName: class,
			DefaultBackend:   &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
		},
	}
}

// Against a real API server and the least-privilege role: the leader
// writes status.loadBalancer of the Ingresses it handles from the gateway
// Service, follows the Service, leaves other controllers' Ingresses and
// every spec alone, and hands over to the other replica when it stops.
func TestIngressStatusAgainstAPIServer(t *testing.T) {
	c := apiserver.Start(t)
	cs := c.Clientset()
	ctx := context.Background()
	ns := c.Namespace(t, "ingress-status")
	c.AllowRestricted(t, ns)

	ours, theirs := ns+"-ours", ns+"-nginx"
	for name, controller := range map[string]string{ours: ingress.ControllerName, theirs: "k8s.io/ingress-nginx"} {
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
		if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, ic, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingressgateway"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"istio": "ingressgateway"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ing := range []*networkingv1.Ingress{
		newStatusIngress(ns, "by-class", ptr.To(ours), nil),
		newStatusIngress(ns, "by-annotation", nil, map[string]string{ingress.ClassAnnotation: "wayfinder"}),
		newStatusIngress(ns, "nginx", ptr.To(theirs), nil),
	} {
		if _, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	a := startIngressWriter(t, c, ns, "pod-a", "wayfinder")
	b := startIngressWriter(t, c, ns, "pod-b", "wayfinder")

	// No load balancer yet: the cluster IP the API server allocated.
	clusterIP := []networkingv1.IngressLoadBalancerIngress{{IP: svc.Spec.ClusterIP}}
	waitIngressStatus(t, cs, ns, "by-class", clusterIP)
	waitIngressStatus(t, cs, ns, "by-annotation", clusterIP)

	// The load balancer gets an address: status follows.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}, {Hostname: "lb.example.com"}}
	if svc, err = cs.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	lb := []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.10"}, {Hostname: "lb.example.com"}}
	got := waitIngressStatus(t, cs, ns, "by-class", lb)
	if got.Generation != 1 {
		t.Errorf("generation %d: the spec was written", got.Generation)
	}
	waitIngressStatus(t, cs, ns, "by-annotation", lb)

	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "wayfinder-ingress-status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	leader, follower := a, b
	switch holder {
	case "pod-a":
	case "pod-b":
		leader, follower = b, a
	default:
		t.Fatalf("lease holder %q", holder)
	}
	if !leader.w.IsLeader() || follower.w.IsLeader() {
		t.Fatalf("leadership: leader %v follower %v", leader.w.IsLeader(), follower.w.IsLeader())
	}

	// The leader stops (its Lease released); the other replica takes over
	// and follows the next change.
	leader.stop()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.11"}}
	if _, err := cs.CoreV1().Services(ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngressStatus(t, cs, ns, "by-class", []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.11"}})
	if !follower.w.IsLeader() {
		t.Error("the remaining replica wrote status without leading")
	}

	nginx, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "nginx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nginx.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("another controller's Ingress got status %v", nginx.Status.LoadBalancer.Ingress)
	}
}

// An Ingress with TLS read from a real API server as the least-privilege
// user: the Ingress source and the Secret store give a push context whose
// gateway has an HTTPS listener for the TLS host with the Secret's
// certificate over SDS; when the Secret loses its key, the change is
// signalled and the server is reported and left out.
func TestIngressTLSAgainstAPIServer(t *testing.T) {
	c := apiserver.Start(t)
	admin := c.Clientset()
	ctx := context.Background()
	ns := c.Namespace(t, "ingress-tls")
	c.AllowRestricted(t, ns)
	rc, err := kclient.New(c.RestrictedRESTConfig())
	if err != nil {
		t.Fatal(err)
	}

	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	className := ns + "-wayfinder"
	prefix := networkingv1.PathTypePrefix
	objects := []func() error{
		func() error {
			_, err := admin.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: className},
				Spec: networkingv1.IngressClassSpec{Controller: ingress.ControllerName}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop"},
				Spec: networkingv1.IngressSpec{
					IngressClassName: ptr.To(className),
					TLS:              []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
					Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
							Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}},
				}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}

	q := queue.New(queue.Options{})
	src, err := ingress.NewController(ingress.ControllerOptions{Client: rc.Kube, Namespaces: []string{ns}, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan string, 10)
	secrets, err := ingress.NewSecrets(ingress.SecretsOptions{Client: rc.Kube, Namespaces: []string{ns},
		OnChange: func(ns, name string) { changed <- ns + "/" + name }})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 10)
	for _, k := range []schema.Kind{schema.Gateway, schema.VirtualService} {
		src.RegisterEventHandler(k, func(_, cur config.Config, ev model.Event) { events <- ev.String() + " " + cur.Name })
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(runCtx) })
	wg.Go(func() { src.Run(runCtx) })
	wg.Go(func() { secrets.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()
	select {
	case <-src.Synced():
	case <-time.After(60 * time.Second):
		t.Fatal("Ingress source not synced")
	}
	if !secrets.WaitForSync(runCtx) {
		t.Fatal("Secrets not synced")
	}
	var got []string
	for len(got) < 3 {
		select {
		case e := <-events:
			got = append(got, e)
		case <-time.After(60 * time.Second):
			t.Fatalf("events so far %v", got)
		}
	}
	slices.Sort(got)
	want := []string{"add shop-example-com-shop-istio-autogenerated-k8s-ingress", "add shop-istio-autogenerated-k8s-ingress", "add shop-istio-autogenerated-k8s-ingress-tls"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if errs := src.ConfigErrors(); len(errs) != 0 {
		t.Errorf("config errors %v", errs)
	}

	build := func() core.GatewayResources {
		push := model.NewPushContext(src)
		proxy := &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
		// The gateway's ServiceAccount is taken to be granted the
		// Ingress's Secret here; rbac_secrets_test.go asks the API server.
		scope := model.SecretScope{Identity: &model.Identity{Namespace: "istio-system", ServiceAccount: "gateway", Method: model.MethodToken}, Authorizer: grantAll{}}
		return core.BuildGatewayWithSecrets(push, push.GatewaysForProxy(proxy), secrets, scope)
	}
	// Without a Service registry the backend is only warned about.
	failures := func(errs []*config.Error) []*config.Error {
		return slices.DeleteFunc(slices.Clone(errs), func(e *config.Error) bool { return e.Warning })
	}
	gr := build()
	var listeners []string
	for _, l := range gr.Listeners {
		listeners = append(listeners, l.Name)
	}
	sdsName := "kubernetes://" + ns + "/shop-tls"
	if !slices.Equal(listeners, []string{"0.0.0.0_443", "0.0.0.0_80"}) || len(gr.Secrets) != 1 || gr.Secrets[0].Name != sdsName || len(failures(gr.Errors)) != 0 {
		t.Fatalf("listeners %v secrets %d errors %v", listeners, len(gr.Secrets), gr.Errors)
	}
	if sni := gr.Listeners[0].GetFilterChains()[0].GetFilterChainMatch().GetServerNames(); !slices.Equal(sni, []string{"shop.example.com"}) {
		t.Errorf("server names %v", sni)
	}
	if string(gr.Secrets[0].GetTlsCertificate().GetCertificateChain().GetInlineBytes()) != string(cert) {
		t.Error("the secret does not carry the Secret's certificate")
	}

	// The Secret loses its key: signalled, and the HTTPS server goes.
	sec, err := admin.CoreV1().Secrets(ns).Get(ctx, "shop-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Type, sec.Data = corev1.SecretTypeOpaque, map[string][]byte{"tls.crt": cert}
	if err := admin.CoreV1().Secrets(ns).Delete(ctx, "shop-tls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sec.ResourceVersion = ""
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for want := 0; want < 2; { // the initial add, then the delete
		select {
		case name := <-changed:
			if name != ns+"/shop-tls" {
				t.Fatalf("change for %s", name)
			}
			want++
		case <-time.After(60 * time.Second):
			t.Fatal("the Secret change was not signalled")
		}
	}
	gr = build()
	if len(gr.Listeners) != 1 || gr.Listeners[0].Name != "0.0.0.0_80" || len(gr.Secrets) != 0 ||
		len(failures(gr.Errors)) != 1 || !strings.Contains(failures(gr.Errors)[0].Error(), "Secret "+ns+"/shop-tls does not exist (or holds no tls.crt and tls.key)") {
		t.Errorf("after the key went: listeners %v, %d secrets, errors %v", gr.Listeners, len(gr.Secrets), gr.Errors)
	}
}

// grantAll is a SecretAuthorizer that allows every Secret.
type grantAll struct{}

func (grantAll) CanGetSecret(model.Identity, model.SecretRef) (bool, string) { return true, "" }

func (grantAll) CanListSecrets(model.Identity, string) (bool, string) { return true, "" }
