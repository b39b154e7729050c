package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	istioinformers "istio.io/client-go/pkg/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
)

var cluster apiserver.Shared

func TestMain(m *testing.M) {
	code := cluster.Run(m)
	if code == 0 {
		// The cluster is stopped, so client connections have closed;
		// only klog's flush daemon, started at init, may remain.
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// timeout bounds every wait on the API server; answers take milliseconds.
const timeout = 30 * time.Second

func virtualService(ns, name, host string) *networkingv1.VirtualService {
	return &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: networking.VirtualService{
			Hosts:    []string{host},
			Gateways: []string{"istio-system/ingress"},
			Http: []*networking.HTTPRoute{{
				Route: []*networking.HTTPRouteDestination{{
					Destination: &networking.Destination{Host: "reviews." + ns + ".svc.cluster.local"},
				}},
			}},
		},
	}
}

func names(vs []*networkingv1.VirtualService) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	slices.Sort(out)
	return out
}

// A VirtualService goes in through the Istio clientset and comes back the
// same; after kube-apiserver restarts on the same port and etcd, it is still
// there, and an informer started before the restart resumes its watch and
// sees an object created after it.
func TestVirtualServiceSurvivesAPIServerRestart(t *testing.T) {
	c := cluster.Get(t)
	ns := c.Namespace(t, "harness-restart")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ic := istioclient.NewForConfigOrDie(c.RESTConfig())

	if _, err := ic.NetworkingV1().VirtualServices(ns).Create(ctx, virtualService(ns, "reviews", "reviews.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := ic.NetworkingV1().VirtualServices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("listed %d VirtualServices, want 1", len(list.Items))
	}
	got := list.Items[0]
	if got.Name != "reviews" || !slices.Equal(got.Spec.Hosts, []string{"reviews.example.com"}) ||
		got.Spec.Http[0].Route[0].Destination.Host != "reviews."+ns+".svc.cluster.local" {
		t.Fatalf("listed %s with spec %v, want what was created", got.Name, &got.Spec)
	}

	// An informer on the namespace, reporting every name it is told of.
	seen := make(chan string, 10)
	factory := istioinformers.NewSharedInformerFactoryWithOptions(ic, 0, istioinformers.WithNamespace(ns))
	inf := factory.Networking().V1().VirtualServices().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { seen <- obj.(*networkingv1.VirtualService).Name },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	waitFor(t, seen, "reviews")

	restart := time.Now()
	c.RestartAPIServer(t)
	t.Logf("kube-apiserver restarted in %v", time.Since(restart))

	if _, err := ic.NetworkingV1().VirtualServices(ns).Create(ctx, virtualService(ns, "ratings", "ratings.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating after restart: %v", err)
	}
	waitFor(t, seen, "ratings")
	t.Logf("informer saw the new object %v after the restart began", time.Since(restart))

	list, err = ic.NetworkingV1().VirtualServices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing after restart: %v", err)
	}
	items := append([]*networkingv1.VirtualService(nil), list.Items...)
	if got, want := names(items), []string{"ratings", "reviews"}; !slices.Equal(got, want) {
		t.Fatalf("after restart listed %v, want %v", got, want)
	}
	cached, err := factory.Networking().V1().VirtualServices().Lister().VirtualServices(ns).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(cached), []string{"ratings", "reviews"}; !slices.Equal(got, want) {
		t.Fatalf("informer cache after restart holds %v, want %v", got, want)
	}
}

func waitFor(t *testing.T, seen <-chan string, name string) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case n := <-seen:
			if n == name {
				return
			}
		case <-deadline:
			t.Fatalf("the informer never reported VirtualService %q", name)
		}
	}
}

// The admin kubeconfig file works on its own (token and CA), and the server
// is the Kubernetes version the tools module pins.
func TestAdminKubeconfig(t *testing.T) {
	c := cluster.Get(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Insecure || len(cfg.CAData) == 0 {
		t.Fatalf("kubeconfig should verify the server with its CA, got insecure=%v and %d bytes of CA", cfg.Insecure, len(cfg.CAData))
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != "1" || v.Minor != "37" || !strings.HasPrefix(v.GitVersion, "v1.37.") {
		t.Fatalf("server version %s (major %q minor %q), want v1.37.x", v.GitVersion, v.Major, v.Minor)
	}
	if !strings.HasPrefix(c.URL(), "https://127.0.0.1:") || cfg.Host != c.URL() {
		t.Fatalf("server %s (kubeconfig %s), want loopback https", c.URL(), cfg.Host)
	}
}

// Istio's CRDs are served: the networking kinds as networking.istio.io/v1,
// Telemetry as telemetry.istio.io/v1 and v1alpha1, RequestAuthentication
// and AuthorizationPolicy as security.istio.io/v1 and v1beta1, EnvoyFilter
// as networking.istio.io/v1alpha3 (its only version).
func TestIstioCRDsServed(t *testing.T) {
	c := cluster.Get(t)
	res, err := c.Clientset().Discovery().ServerResourcesForGroupVersion("networking.istio.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.APIResources {
		if !strings.Contains(r.Name, "/") {
			got = append(got, r.Name)
		}
	}
	slices.Sort(got)
	want := []string{"destinationrules", "gateways", "serviceentries", "virtualservices"}
	if !slices.Equal(got, want) {
		t.Fatalf("networking.istio.io/v1 serves %v, want %v", got, want)
	}
	// Telemetry is served as istiod reads it: v1 and v1alpha1.
	for _, gv := range []string{"telemetry.istio.io/v1", "telemetry.istio.io/v1alpha1"} {
		res, err := c.Clientset().Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("%s: %v", gv, err)
		}
		if !slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == "telemetries" }) {
			t.Errorf("%s does not serve telemetries: %v", gv, res.APIResources)
		}
	}
	alpha3, err := c.Clientset().Discovery().ServerResourcesForGroupVersion("networking.istio.io/v1alpha3")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"envoyfilters", "envoyfilters/status"} {
		if !slices.ContainsFunc(alpha3.APIResources, func(r metav1.APIResource) bool { return r.Name == name }) {
			t.Errorf("networking.istio.io/v1alpha3 does not serve %s: %v", name, alpha3.APIResources)
		}
	}
	for _, gv := range []string{"security.istio.io/v1", "security.istio.io/v1beta1"} {
		res, err := c.Clientset().Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("%s: %v", gv, err)
		}
		for _, name := range []string{"requestauthentications", "authorizationpolicies", "requestauthentications/status", "authorizationpolicies/status"} {
			if !slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == name }) {
				t.Errorf("%s does not serve %s: %v", gv, name, res.APIResources)
			}
		}
	}
}

// The Gateway API CRDs are served: the standard kinds as
// gateway.networking.k8s.io/v1, TLSRoute, TCPRoute, ListenerSet and
// BackendTLSPolicy included.
func TestGatewayAPICRDsServed(t *testing.T) {
	c := cluster.Get(t)
	res, err := c.Clientset().Discovery().ServerResourcesForGroupVersion("gateway.networking.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.APIResources {
		if !strings.Contains(r.Name, "/") {
			got = append(got, r.Name)
		}
	}
	slices.Sort(got)
	want := []string{"backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes", "listenersets", "referencegrants", "tcproutes", "tlsroutes"}
	if !slices.Equal(got, want) {
		t.Fatalf("gateway.networking.k8s.io/v1 serves %v, want %v", got, want)
	}
}

// The restricted user reads only where AllowRestricted let it: elsewhere
// and cluster-wide the server answers Forbidden.
func TestRestrictedUser(t *testing.T) {
	c := cluster.Get(t)
	allowed := c.Namespace(t, "harness-allowed")
	forbidden := c.Namespace(t, "harness-forbidden")
	c.AllowRestricted(t, allowed)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, ns := range []string{allowed, forbidden} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: ns},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 9080}}},
		}
		if _, err := c.Clientset().CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", c.RestrictedKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	rc := kubernetes.NewForConfigOrDie(cfg)
	// The API server's RBAC authorizer learns of the new RoleBinding
	// through its own informer, a moment after it is stored.
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := rc.CoreV1().Services(allowed).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("restricted user listing services in allowed namespace %s: %v", allowed, err)
	}
	list, err := rc.CoreV1().Services(allowed).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "reviews" {
		t.Fatalf("restricted user listed %v (err %v) in %s, want the reviews Service", list, err, allowed)
	}
	if _, err := rc.CoreV1().Services(forbidden).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("restricted user listing services in %s: got %v, want Forbidden", forbidden, err)
	} else if !strings.Contains(err.Error(), apiserver.RestrictedUser) || !strings.Contains(err.Error(), forbidden) {
		t.Fatalf("Forbidden error %q should name the user and namespace", err)
	}
	if _, err := rc.CoreV1().Services("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("restricted user listing services cluster-wide: got %v, want Forbidden", err)
	}
	if _, err := rc.NetworkingV1().IngressClasses().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("restricted user listing IngressClasses: %v", err)
	}
	ic := istioclient.NewForConfigOrDie(c.RestrictedRESTConfig())
	if _, err := ic.NetworkingV1().VirtualServices(allowed).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("restricted user listing VirtualServices in %s: %v", allowed, err)
	}
	if _, err := ic.NetworkingV1().VirtualServices(forbidden).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("restricted user listing VirtualServices in %s: got %v, want Forbidden", forbidden, err)
	}
}

// Apply sends any kind by server-side apply, and a dry run stores nothing.
func TestApply(t *testing.T) {
	c := cluster.Get(t)
	ns := c.Namespace(t, "harness-apply")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	doc := func(name string) []byte {
		return fmt.Appendf(nil, `apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: %s
  namespace: %s
spec:
  selector:
    istio: ingressgateway
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*.example.com"]
`, name, ns)
	}
	if _, err := c.Apply(ctx, apiserver.ApplyOptions{DryRun: true}, doc("dry")); err != nil {
		t.Fatal(err)
	}
	objs, err := c.Apply(ctx, apiserver.ApplyOptions{}, doc("real"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetName() != "real" || objs[0].GetUID() == "" {
		t.Fatalf("Apply returned %v, want the stored Gateway", objs)
	}
	ic := istioclient.NewForConfigOrDie(c.RESTConfig())
	list, err := ic.NetworkingV1().Gateways(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "real" || list.Items[0].Spec.Servers[0].Port.Number != 80 {
		t.Fatalf("listed %d Gateways, want only the real one with port 80", len(list.Items))
	}

	// A CRD schema violation is refused, naming the object.
	_, err = c.Apply(ctx, apiserver.ApplyOptions{}, []byte("apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: bad, namespace: "+ns+"}\nspec: {servers: [{port: {number: \"eighty\"}}]}\n"))
	if err == nil || !strings.Contains(err.Error(), "Gateway "+ns+"/bad") {
		t.Fatalf("applying an invalid Gateway: got %v, want an error naming it", err)
	}
}

func TestFindBinariesReportsWhatToRun(t *testing.T) {
	_, err := apiserver.FindBinaries(apiserver.Binaries{KubeAPIServer: "/nonexistent/kube-apiserver", Etcd: "/nonexistent/etcd"})
	if !errors.Is(err, apiserver.ErrMissingBinaries) {
		t.Fatalf("got %v, want ErrMissingBinaries", err)
	}
	for _, want := range []string{"tools/kube-apiserver/ensure.sh", "apt-get install etcd-server", "/nonexistent/etcd"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should mention %q", err, want)
		}
	}
}
