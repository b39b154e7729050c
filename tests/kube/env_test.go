package kube

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

var cluster apiserver.Shared

func TestMain(m *testing.M) {
	code := cluster.Run(m)
	serverenv.RemoveBinaryOnce()
	os.Exit(code)
}

// waitTimeout bounds every wait. The API server runs on a shared 2-core
// machine; events normally arrive in well under a second.
const waitTimeout = 60 * time.Second

// apiPoll is how these tests wait on the API server, the server's debug
// pages and its metrics, none of which announces a change: bounded by
// waitTimeout, asking every 50 ms.
var apiPoll = []poll.Option{poll.Timeout(waitTimeout), poll.Interval(50 * time.Millisecond)}

// env is one pilot-discovery in Kubernetes mode watching one namespace.
type env struct {
	t      *testing.T
	c      *apiserver.Cluster
	ns     string
	kube   kubernetes.Interface
	istio  istioclient.Interface
	server *bootstrap.Server
}

// newCluster returns the shared cluster and a fresh namespace in it.
func newCluster(t *testing.T, prefix string) (*apiserver.Cluster, string) {
	t.Helper()
	c := cluster.Get(t)
	return c, c.Namespace(t, prefix)
}

// startServer runs pilot-discovery in-process with opts and waits until
// it is ready.
func startServer(t *testing.T, opts bootstrap.Options) *bootstrap.Server {
	t.Helper()
	return serverenv.StartServer(t, opts)
}

// newEnv starts a server watching a new namespace with admin rights.
func newEnv(t *testing.T, prefix string) *env {
	t.Helper()
	return newEnvWith(t, prefix, bootstrap.Options{})
}

// newEnvWith is newEnv with server options.
func newEnvWith(t *testing.T, prefix string, opts bootstrap.Options) *env {
	t.Helper()
	c, ns := newCluster(t, prefix)
	e := clientEnv(t, c, ns)
	opts.Kubeconfig, opts.WatchNamespaces = c.Kubeconfig, []string{ns}
	e.server = startServer(t, opts)
	return e
}

// clientEnv is an env of namespace ns with its API clients and no server
// yet, for tests that create objects first or start the server their own
// way.
func clientEnv(t *testing.T, c *apiserver.Cluster, ns string) *env {
	t.Helper()
	e := &env{t: t, c: c, ns: ns, kube: c.Clientset()}
	var err error
	if e.istio, err = istioclient.NewForConfig(c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	return e
}

// gateway connects an Envoy-like gateway selected by istio=ingressgateway.
func (e *env) gateway(pod string) *adsc.Client {
	e.t.Helper()
	return serverenv.Gateway(e.t, e.server.GRPCAddr().String(), pod, map[string]string{"istio": "ingressgateway"}, nil)
}

func waitFor(t *testing.T, c *adsc.Client, what string, cond func(adsc.State) bool) adsc.State {
	t.Helper()
	return serverenv.WaitFor(t, c, what, waitTimeout, cond)
}

func describe(s adsc.State) string { return serverenv.Describe(s) }

// host is the cluster-local name of a Service in the env's namespace.
func (e *env) host(svc string) string { return svc + "." + e.ns + ".svc.cluster.local" }

// virtualHost reports whether route config http.80 has a virtual host
// for host:80 whose first route goes to cluster.
func virtualHost(s adsc.State, host, cluster string) bool {
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		if vh.GetName() != host+":80" {
			continue
		}
		if cluster == "" {
			return true
		}
		for _, r := range vh.GetRoutes() {
			if r.GetRoute().GetCluster() == cluster {
				return true
			}
			for _, wc := range r.GetRoute().GetWeightedClusters().GetClusters() {
				if wc.GetName() == cluster {
					return true
				}
			}
		}
	}
	return false
}

// endpointCount is the number of endpoints of cluster in s.
func endpointCount(s adsc.State, cluster string) int {
	n := 0
	for _, l := range s.Endpoints[cluster].GetEndpoints() {
		n += len(l.GetLbEndpoints())
	}
	return n
}

// --- objects ---------------------------------------------------------------

var ctx = context.Background()

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// update runs a read-modify-write of an object again while it fails on a
// conflict: the status writers write the objects the tests edit.
func (e *env) update(rmw func() error) {
	e.t.Helper()
	e.must(retry.RetryOnConflict(retry.DefaultRetry, rmw))
}

func (e *env) gatewayObj(name string) *networkingv1.Gateway {
	return &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{{
			Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*"},
		}}},
	}
}

func (e *env) virtualService(name, host, dest, subset string) *networkingv1.VirtualService {
	return &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: networking.VirtualService{Hosts: []string{host}, Gateways: []string{"gw"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: dest, Subset: subset, Port: &networking.PortSelector{Number: 9080}}}},
		}}},
	}
}

func (e *env) createGateway(name string) {
	e.t.Helper()
	_, err := e.istio.NetworkingV1().Gateways(e.ns).Create(ctx, e.gatewayObj(name), metav1.CreateOptions{})
	e.must(err)
}

func (e *env) createVS(vs *networkingv1.VirtualService) {
	e.t.Helper()
	_, err := e.istio.NetworkingV1().VirtualServices(e.ns).Create(ctx, vs, metav1.CreateOptions{})
	e.must(err)
}

func (e *env) service(name string) *corev1.Service {
	return objects.Service(e.ns, name, corev1.ServicePort{Name: "http", Port: 9080, TargetPort: intstr.FromString("web")})
}

func (e *env) createService(name string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().Services(e.ns).Create(ctx, e.service(name), metav1.CreateOptions{})
	e.must(err)
}

// ep is one endpoint of a slice: address, backing pod, ready.
type ep struct {
	ip, pod string
	ready   bool
}

// applySlice creates or replaces the EndpointSlice name of service svc,
// whose named target port "web" resolves to 8080.
func (e *env) applySlice(svc, name string, eps ...ep) {
	e.t.Helper()
	es := objects.EndpointSlice(e.ns, svc, name, []discoveryv1.EndpointPort{objects.TCPPort("http", 8080)})
	for _, p := range eps {
		x := discoveryv1.Endpoint{Addresses: []string{p.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(p.ready)}}
		if p.pod != "" {
			x.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: p.pod}
		}
		es.Endpoints = append(es.Endpoints, x)
	}
	cur, err := e.kube.DiscoveryV1().EndpointSlices(e.ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = e.kube.DiscoveryV1().EndpointSlices(e.ns).Create(ctx, es, metav1.CreateOptions{})
	case err == nil:
		es.ResourceVersion = cur.ResourceVersion
		_, err = e.kube.DiscoveryV1().EndpointSlices(e.ns).Update(ctx, es, metav1.UpdateOptions{})
	}
	e.must(err)
}

func (e *env) createPod(name string, labels map[string]string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().Pods(e.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}},
	}, metav1.CreateOptions{})
	e.must(err)
}

// debugAdminToken is a token of ServiceAccount podNamespace/wayfinder-debug:
// the server's own namespace (--pod-namespace) is the debug admin
// namespace by default, so it reads every debug endpoint.
func debugAdminToken(t *testing.T, podNamespace string) string {
	t.Helper()
	return cluster.Get(t).Token(t, podNamespace, "wayfinder-debug", nil, time.Hour)
}

// --- metrics ---------------------------------------------------------------

// metric reads one sample, e.g. `pilot_xds_pushes{type="cds"}`, from the
// server's /metrics; absent means 0.
func (e *env) metric(sample string) float64 {
	e.t.Helper()
	resp, err := http.Get("http://" + e.server.HTTPAddr().String() + "/metrics")
	e.must(err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if ok && name == sample {
			f, err := strconv.ParseFloat(val, 64)
			e.must(err)
			return f
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return 0
}

// pushCounts are the responses sent per xDS type.
type pushCounts map[string]float64

func (e *env) pushes() pushCounts {
	out := pushCounts{}
	for _, typ := range []string{"cds", "eds", "lds", "rds"} {
		out[typ] = e.metric(fmt.Sprintf(`pilot_xds_pushes{type=%q}`, typ))
	}
	return out
}

type configError = config.Error

// timeAfter is the bound of one wait.
func timeAfter() <-chan time.Time { return time.After(waitTimeout) }

func contextWithTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitTimeout)
}
