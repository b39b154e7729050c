package kube

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	knetworking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/ingress"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/security"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// These tests drive Kubernetes Ingress through the whole in-process
// server, as a user would: IngressClass, Services, EndpointSlices,
// Secrets and Ingresses written to a real API server reach an Envoy-like
// gateway (adsc) as listeners, routes, clusters and endpoints, show in the
// debug endpoints, and get their status written back.

// ingressGatewayService is the gateway Service whose address the server
// writes to the Ingresses' status (--ingress-service).
const ingressGatewayService = "wayfinder-ingressgateway"

// ingressEnv is one server in Kubernetes mode, with Ingress status on,
// watching a fresh namespace that holds an IngressClass of Wayfinder's
// controller, the backend Services "web" and "fallback" with
// EndpointSlices, and the gateway Service.
type ingressEnv struct {
	t         *testing.T
	ns        string
	class     string
	kube      kubernetes.Interface
	server    *bootstrap.Server
	gatewayIP string // the gateway Service's cluster IP
	cluster_  *apiserver.Cluster
	rootPEM   []byte // the secure port's CA (ConfigMap wayfinder-ca-root-cert)
}

// gatewayServiceAccount is the gateway proxies' ServiceAccount, Istio's
// default gateway's: they dial the secure port with a real token of it
// (TokenRequest), verified by TokenReview.
const gatewayServiceAccount = "istio-system/istio-ingressgateway-service-account"

// grantSecret lets the gateway's ServiceAccount get Secret name of e's
// namespace with manifests/examples/gateway-secret-access.yaml, and waits
// until the API server's RBAC says so (it learns bindings through its own
// informer), so the server's first review of it is already allowed.
func (e *ingressEnv) grantSecret(name string) {
	e.t.Helper()
	example, err := os.ReadFile(filepath.Join("..", "..", "manifests", "examples", "gateway-secret-access.yaml"))
	e.must(err)
	example = bytes.ReplaceAll(example, []byte("namespace: shop"), []byte("namespace: "+e.ns))
	example = bytes.ReplaceAll(example, []byte("shop-tls"), []byte(name))
	_, err = e.cluster_.Apply(ctx, apiserver.ApplyOptions{}, bytes.Split(example, []byte("\n---\n"))...)
	e.must(err)
	ns, sa, _ := strings.Cut(gatewayServiceAccount, "/")
	// Polled: the API server's RBAC informer, not ours.
	poll.Until(e.t, fmt.Sprintf("RBAC to allow %s to get Secret %s/%s", gatewayServiceAccount, e.ns, name), func() bool {
		r, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":" + sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: e.ns, Verb: "get", Resource: "secrets", Name: name},
		}}, metav1.CreateOptions{})
		e.must(err)
		return r.Status.Allowed
	}, poll.Timeout(waitTimeout), poll.Interval(20*time.Millisecond))
}

// Backend endpoints: never dialled, only translated.
var (
	webIPs      = []string{"10.11.0.1", "10.11.0.2"}
	fallbackIPs = []string{"10.11.1.1"}
)

// newIngressEnv starts the server watching a fresh namespace and the
// namespaces in also, with its secure port on loopback; its CA lives in
// the fresh namespace.
func newIngressEnv(t *testing.T, prefix string, also ...string) *ingressEnv {
	t.Helper()
	c, ns := newCluster(t, prefix)
	e := &ingressEnv{t: t, ns: ns, class: ns + "-wayfinder", kube: c.Clientset()}
	// The gateways' ServiceAccount lives in istio-system, as Istio's.
	ensureNamespace(t, c, "istio-system")

	// IngressClasses are cluster-scoped: the namespace makes the name unique.
	_, err := e.kube.NetworkingV1().IngressClasses().Create(ctx, &knetworking.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: e.class},
		Spec:       knetworking.IngressClassSpec{Controller: ingress.ControllerName},
	}, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		if err := e.kube.NetworkingV1().IngressClasses().Delete(ctx, e.class, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting IngressClass %s: %v", e.class, err)
		}
	})

	e.backend("web", webIPs...)
	e.backend("fallback", fallbackIPs...)
	// Type LoadBalancer: it has a cluster IP at once, and the API server
	// accepts a status.loadBalancer for it later (no cloud controller here).
	gw, err := e.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ingressGatewayService},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"istio": "ingressgateway"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	e.must(err)
	if gw.Spec.ClusterIP == "" || gw.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatalf("gateway Service got no cluster IP: %q", gw.Spec.ClusterIP)
	}
	e.gatewayIP = gw.Spec.ClusterIP

	e.server = startServer(t, bootstrap.Options{
		Kubeconfig: c.Kubeconfig, WatchNamespaces: append([]string{ns}, also...),
		PodName: "wayfinder-0", PodNamespace: ns,
		Ingress:  bootstrap.IngressOptions{Service: ns + "/" + ingressGatewayService},
		Security: bootstrap.SecurityOptions{SecureGRPCAddr: "127.0.0.1:0"},
		// A Role granted after a refusal takes effect within seconds.
		SecretReview: bootstrap.SecretReviewOptions{DeniedTTL: 2 * time.Second, Refresh: 500 * time.Millisecond},
	})
	e.cluster_ = c
	cm, err := e.kube.CoreV1().ConfigMaps(ns).Get(ctx, security.RootCertConfigMap, metav1.GetOptions{})
	e.must(err)
	e.rootPEM = []byte(cm.Data[security.RootCertKey])
	return e
}

// ensureNamespace creates namespace name unless it exists (istio-system
// is shared by the tests of the package's cluster).
func ensureNamespace(t *testing.T, c *apiserver.Cluster, name string) {
	t.Helper()
	_, err := c.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

func (e *ingressEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// backend creates Service name (port 80 "http" to target port 8080) and
// an EndpointSlice of ready endpoints at ips.
func (e *ingressEnv) backend(name string, ips ...string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().Services(e.ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	e.must(err)
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	_, err = e.kube.DiscoveryV1().EndpointSlices(e.ns).Create(ctx, es, metav1.CreateOptions{})
	e.must(err)
}

// cluster is the Envoy cluster of port 80 of the Service svc.
func (e *ingressEnv) cluster(svc string) string {
	return model.ClusterName(80, "", svc+"."+e.ns+".svc.cluster.local")
}

// gatewayNode is the identity of the gateway proxy: selected by the
// generated Gateways' istio=ingressgateway, which (like Istio's) do not
// restrict the proxy's namespace, so it runs in istio-system as usual.
func gatewayNode(pod string) adsc.NodeOptions {
	return adsc.NodeOptions{IP: "127.0.0.1", PodName: pod, Namespace: "istio-system",
		Labels: map[string]string{"istio": "ingressgateway"}}
}

// gateway connects the gateway proxy pod of istio-system to the secure
// port with a real token of gatewayServiceAccount.
func (e *ingressEnv) gateway(pod string) *adsc.Client {
	e.t.Helper()
	ns, sa, _ := strings.Cut(gatewayServiceAccount, "/")
	return e.gatewayAs(gatewayNode(pod), sa, ns)
}

// gatewayAs connects a gateway proxy as node to the secure port with a
// real token (TokenRequest, audience wayfinder) of ServiceAccount sa of
// namespace ns, trusting only the server's published CA.
func (e *ingressEnv) gatewayAs(node adsc.NodeOptions, sa, ns string) *adsc.Client {
	e.t.Helper()
	dctx, cancel := contextWithTimeout()
	defer cancel()
	c, err := adsc.Dial(dctx, adsc.Config{Address: e.server.SecureGRPCAddr().String(), Node: adsc.IstioNode(node),
		TLS: e.tlsConfig(), Token: e.cluster_.Token(e.t, ns, sa, []string{"wayfinder"}, time.Hour)})
	e.must(err)
	e.t.Cleanup(func() { c.Close() })
	return c
}

// tlsConfig trusts only the server's CA and checks the name gateways dial.
func (e *ingressEnv) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.rootPEM) {
		e.t.Fatal("root-cert.pem holds no certificate")
	}
	return &tls.Config{RootCAs: pool, ServerName: "pilot-discovery." + e.ns + ".svc"}
}

// path is one Ingress path to a Service's port 80.
type path struct {
	typ     knetworking.PathType
	path    string
	service string
}

// ingressObj is an Ingress of e's class for host with paths, the default
// backend "fallback", and TLS from secret when it is set.
func (e *ingressEnv) ingressObj(name, host, secret string, paths ...path) *knetworking.Ingress {
	backend := func(svc string) knetworking.IngressBackend {
		return knetworking.IngressBackend{Service: &knetworking.IngressServiceBackend{Name: svc, Port: knetworking.ServiceBackendPort{Number: 80}}}
	}
	rule := &knetworking.HTTPIngressRuleValue{}
	for _, p := range paths {
		rule.Paths = append(rule.Paths, knetworking.HTTPIngressPath{Path: p.path, PathType: ptr.To(p.typ), Backend: backend(p.service)})
	}
	fallback := backend("fallback")
	ing := &knetworking.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: knetworking.IngressSpec{
			IngressClassName: ptr.To(e.class),
			DefaultBackend:   &fallback,
			Rules:            []knetworking.IngressRule{{Host: host, IngressRuleValue: knetworking.IngressRuleValue{HTTP: rule}}},
		},
	}
	if secret != "" {
		ing.Spec.TLS = []knetworking.IngressTLS{{Hosts: []string{host}, SecretName: secret}}
	}
	return ing
}

func (e *ingressEnv) createIngress(ing *knetworking.Ingress) {
	e.t.Helper()
	_, err := e.kube.NetworkingV1().Ingresses(e.ns).Create(ctx, ing, metav1.CreateOptions{})
	e.must(err)
}

// routeSummary renders a virtual host's routes in order, one
// "KIND=VALUE -> CLUSTER" each, for comparison and readable failures.
func routeSummary(vh *routev3.VirtualHost) []string {
	var out []string
	for _, r := range vh.GetRoutes() {
		m := r.GetMatch()
		var match string
		switch {
		case m.GetPath() != "":
			match = "path=" + m.GetPath()
		case m.GetPrefix() != "":
			match = "prefix=" + m.GetPrefix()
		default:
			match = fmt.Sprintf("other=%v", m)
		}
		if len(m.GetHeaders()) > 0 || len(m.GetQueryParameters()) > 0 {
			match += " (with header or query conditions)"
		}
		out = append(out, match+" -> "+r.GetRoute().GetCluster())
	}
	return out
}

// findVirtualHost returns the virtual host named name in route config rc.
func findVirtualHost(s adsc.State, rc, name string) *routev3.VirtualHost {
	for _, vh := range s.Routes[rc].GetVirtualHosts() {
		if vh.GetName() == name {
			return vh
		}
	}
	return nil
}

// endpointAddrs lists cluster's endpoints as sorted "IP:PORT".
func endpointAddrs(s adsc.State, cluster string) []string {
	var out []string
	for _, l := range s.Endpoints[cluster].GetEndpoints() {
		for _, lb := range l.GetLbEndpoints() {
			a := lb.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, fmt.Sprintf("%s:%d", a.GetAddress(), a.GetPortValue()))
		}
	}
	slices.Sort(out)
	return out
}

func withPort(ips []string, port int) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = fmt.Sprintf("%s:%d", ip, port)
	}
	slices.Sort(out)
	return out
}

// getJSON GETs a debug endpoint of the server and decodes its JSON body;
// it returns the raw body too.
func (e *ingressEnv) getJSON(pathAndQuery string, v any) string {
	e.t.Helper()
	// Kubernetes mode answers debug paths to a debug admin's token only.
	req, err := http.NewRequest(http.MethodGet, "http://"+e.server.HTTPAddr().String()+pathAndQuery, nil)
	e.must(err)
	req.Header.Set("Authorization", "Bearer "+e.debugToken())
	resp, err := http.DefaultClient.Do(req)
	e.must(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	e.must(err)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s: %s: %s", pathAndQuery, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		e.t.Fatalf("GET %s: decoding %s: %v", pathAndQuery, body, err)
	}
	return string(body)
}

// dumpedSecrets returns the names of the secrets /debug/config_dump shows
// for the proxy, and the raw dump.
func (e *ingressEnv) dumpedSecrets(node adsc.NodeOptions) ([]string, string) {
	e.t.Helper()
	var dump struct {
		Configs []struct {
			Type    string `json:"@type"`
			Secrets []struct {
				Name string `json:"name"`
			} `json:"dynamicActiveSecrets"`
		} `json:"configs"`
	}
	raw := e.getJSON("/debug/config_dump?proxyID="+url.QueryEscape(adsc.NodeID(node)), &dump)
	var names []string
	for _, c := range dump.Configs {
		if !strings.HasSuffix(c.Type, "envoy.admin.v3.SecretsConfigDump") {
			continue
		}
		for _, s := range c.Secrets {
			names = append(names, s.Name)
		}
	}
	return names, raw
}

// An Ingress with Exact and Prefix paths and a default backend reaches
// the gateway as listener 0.0.0.0_80 and route config http.80: a virtual
// host for the Ingress's host whose routes go longest path first (the
// Prefix path as Istio makes it element-wise: exactly the path, or the
// path and "/"), the default backend last, to clusters whose endpoints
// are the EndpointSlices' on the target port. A changed path re-orders
// the routes; a deleted Ingress takes the virtual host away.
func TestIngressThroughServerRoutesPathsToServiceEndpoints(t *testing.T) {
	e := newIngressEnv(t, "ingress-http")
	gw := e.gateway("ingress-http-gw")
	const host = "shop.example.com"
	vhName := host + ":80"
	web, fallback := e.cluster("web"), e.cluster("fallback")

	// Written shortest first: the order on the wire must not follow it.
	e.createIngress(e.ingressObj("shop", host, "",
		path{knetworking.PathTypePrefix, "/api", "web"},
		path{knetworking.PathTypeExact, "/checkout", "web"}))
	want := []string{
		"path=/checkout -> " + web,
		"path=/api -> " + web,
		"prefix=/api/ -> " + web,
		"prefix=/ -> " + fallback,
	}
	s := waitFor(t, gw, "the Ingress's routes and endpoints", func(s adsc.State) bool {
		vh := findVirtualHost(s, "http.80", vhName)
		return s.Listeners["0.0.0.0_80"] != nil && vh != nil && slices.Equal(routeSummary(vh), want) &&
			len(endpointAddrs(s, web)) == len(webIPs) && len(endpointAddrs(s, fallback)) == len(fallbackIPs)
	})
	vh := findVirtualHost(s, "http.80", vhName)
	if !slices.Contains(vh.GetDomains(), host) {
		t.Errorf("virtual host %s domains %v, want %s among them", vhName, vh.GetDomains(), host)
	}
	// Exact and prefix are what they say: no regex, case-sensitive as written.
	for _, r := range vh.GetRoutes() {
		if r.GetMatch().GetCaseSensitive() != nil && !r.GetMatch().GetCaseSensitive().GetValue() {
			t.Errorf("route %v is case-insensitive", r.GetMatch())
		}
	}
	// Hosts no rule names get the default backend.
	if wild := findVirtualHost(s, "http.80", "*:80"); wild == nil || !slices.Equal(routeSummary(wild), []string{"prefix=/ -> " + fallback}) {
		t.Errorf("virtual host *:80 = %v, want only the default backend", routeSummary(wild))
	}
	if s.Clusters[web] == nil || s.Clusters[fallback] == nil {
		t.Errorf("clusters %v, want %s and %s", s.Names(adsc.ClusterType), web, fallback)
	}
	if got, want := endpointAddrs(s, web), withPort(webIPs, 8080); !slices.Equal(got, want) {
		t.Errorf("endpoints of %s = %v, want %v (EndpointSlice addresses on the target port)", web, got, want)
	}
	if got, want := endpointAddrs(s, fallback), withPort(fallbackIPs, 8080); !slices.Equal(got, want) {
		t.Errorf("endpoints of %s = %v, want %v", fallback, got, want)
	}

	// A path changes: "/checkout" becomes "/up", now shorter than "/api".
	ing, err := e.kube.NetworkingV1().Ingresses(e.ns).Get(ctx, "shop", metav1.GetOptions{})
	e.must(err)
	ing.Spec.Rules[0].HTTP.Paths[1].Path = "/up"
	_, err = e.kube.NetworkingV1().Ingresses(e.ns).Update(ctx, ing, metav1.UpdateOptions{})
	e.must(err)
	want = []string{
		"path=/api -> " + web,
		"prefix=/api/ -> " + web,
		"path=/up -> " + web,
		"prefix=/ -> " + fallback,
	}
	waitFor(t, gw, "the changed path", func(s adsc.State) bool {
		return slices.Equal(routeSummary(findVirtualHost(s, "http.80", vhName)), want)
	})

	// Deleted: the host's virtual host goes, and with the generated
	// Gateway the listener (the route config is then no longer asked for).
	e.must(e.kube.NetworkingV1().Ingresses(e.ns).Delete(ctx, "shop", metav1.DeleteOptions{}))
	s = waitFor(t, gw, "the Ingress's virtual host gone", func(s adsc.State) bool {
		return findVirtualHost(s, "http.80", vhName) == nil && s.Listeners["0.0.0.0_80"] == nil
	})
	// The Services are still there.
	if s.Clusters[web] == nil || len(endpointAddrs(s, web)) != len(webIPs) {
		t.Errorf("after the delete: cluster %s or its endpoints went (%s)", web, describe(s))
	}
}

// An Ingress TLS entry for its host adds listener 0.0.0.0_443 with a
// filter chain for the host by SNI, whose certificate comes over SDS as
// the Secret "kubernetes://NAMESPACE/NAME" that /debug/config_dump lists
// (its key redacted), once the gateway's ServiceAccount may get it. Without the Secret the HTTPS server is dropped and
// reported in /debug/configz; plain HTTP still serves the host. Once the
// Secret is back, so is HTTPS.
func TestIngressTLSThroughServerServesSecretOverSDS(t *testing.T) {
	e := newIngressEnv(t, "ingress-https")
	node := gatewayNode("ingress-https-gw")
	gw := e.gateway(node.PodName)
	const host = "shop.example.com"
	web := e.cluster("web")
	sdsName := "kubernetes://" + e.ns + "/shop-tls"

	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	_, err = e.kube.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	// The Secret is the Ingress's namespace's and the gateway runs in
	// istio-system: its ServiceAccount is granted get on the Secret as the
	// README's example does (refusals: secret_authz_test.go, featuretest).
	e.grantSecret("shop-tls")
	e.createIngress(e.ingressObj("shop", host, "shop-tls", path{knetworking.PathTypePrefix, "/", "web"}))

	s := waitFor(t, gw, "the HTTPS listener", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] != nil && s.Listeners["0.0.0.0_80"] != nil && virtualHost(s, host, web)
	})
	l := s.Listeners["0.0.0.0_443"]
	if a := l.GetAddress().GetSocketAddress(); a.GetAddress() != "0.0.0.0" || a.GetPortValue() != 443 {
		t.Errorf("listener 0.0.0.0_443 binds %v", a)
	}
	if len(l.GetFilterChains()) != 1 {
		t.Fatalf("listener 0.0.0.0_443 has %d filter chains, want 1 (the Ingress's TLS host)", len(l.GetFilterChains()))
	}
	fc := l.GetFilterChains()[0]
	if sni := fc.GetFilterChainMatch().GetServerNames(); !slices.Equal(sni, []string{host}) {
		t.Errorf("filter chain server names %v, want [%s]", sni, host)
	}
	var tlsCtx tlsv3.DownstreamTlsContext
	e.must(fc.GetTransportSocket().GetTypedConfig().UnmarshalTo(&tlsCtx))
	sds := tlsCtx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()
	if len(sds) != 1 || sds[0].GetName() != sdsName || sds[0].GetSdsConfig().GetAds() == nil {
		t.Errorf("SDS configs %v, want one named %s over ADS", sds, sdsName)
	}
	if len(tlsCtx.GetCommonTlsContext().GetTlsCertificates()) != 0 {
		t.Error("the certificate is inlined in the listener; it must come over SDS")
	}
	// The chain's routes serve the host over HTTPS too.
	var hcm hcmv3.HttpConnectionManager
	e.must(fc.GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm))
	rc := hcm.GetRds().GetRouteConfigName()
	s = waitFor(t, gw, "the HTTPS route config "+rc, func(s adsc.State) bool { return s.Routes[rc] != nil })
	var httpsRoutes []string
	for _, vh := range s.Routes[rc].GetVirtualHosts() {
		if slices.Contains(vh.GetDomains(), host) {
			httpsRoutes = routeSummary(vh)
		}
	}
	if !slices.Equal(httpsRoutes, []string{"prefix=/ -> " + web}) {
		t.Errorf("route config %s for %s: %v, want everything to %s (%v)", rc, host, httpsRoutes, web, s.Routes[rc])
	}

	names, raw := e.dumpedSecrets(node)
	if !slices.Equal(names, []string{sdsName}) {
		t.Errorf("config_dump secrets %v, want [%s]", names, sdsName)
	}
	for _, leak := range []string{base64.StdEncoding.EncodeToString(key), "PRIVATE KEY", string(key[40:80])} {
		if strings.Contains(raw, leak) {
			t.Errorf("config_dump shows key material (%.20q...)", leak)
		}
	}
	if !strings.Contains(raw, `"[redacted]"`) {
		t.Error("config_dump does not show the private key redacted as Envoy's admin does")
	}

	// The Secret is deleted: the HTTPS server goes, HTTP stays.
	e.must(e.kube.CoreV1().Secrets(e.ns).Delete(ctx, "shop-tls", metav1.DeleteOptions{}))
	s = waitFor(t, gw, "the HTTPS listener gone", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] == nil
	})
	if s.Listeners["0.0.0.0_80"] == nil || !virtualHost(s, host, web) || len(endpointAddrs(s, web)) != len(webIPs) {
		t.Errorf("HTTP no longer serves %s after the Secret went: %s", host, describe(s))
	}
	if names, _ := e.dumpedSecrets(node); len(names) != 0 {
		t.Errorf("config_dump still lists secrets %v", names)
	}
	var configz debugapi.Configz
	e.getJSON("/debug/configz", &configz)
	var found []debugapi.ConfigzError
	for _, ce := range configz.Errors {
		if !ce.Warning && strings.Contains(ce.Message, "Secret "+e.ns+"/shop-tls") {
			found = append(found, ce)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0].Message, "does not exist") || found[0].Namespace != e.ns ||
		found[0].Name != ingress.TLSGatewayName("shop") || found[0].Field == "" {
		t.Errorf("configz errors naming the Secret: %+v, want one saying it does not exist, on Gateway %s/%s (all: %+v)",
			found, e.ns, ingress.TLSGatewayName("shop"), configz.Errors)
	}

	// The Secret is back: so are the HTTPS listener and its secret, and the
	// error is gone.
	_, err = e.kube.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	waitFor(t, gw, "the HTTPS listener back", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })
	if names, _ := e.dumpedSecrets(node); !slices.Equal(names, []string{sdsName}) {
		t.Errorf("config_dump secrets %v after the Secret came back, want [%s]", names, sdsName)
	}
	configz = debugapi.Configz{}
	e.getJSON("/debug/configz", &configz)
	for _, ce := range configz.Errors {
		if strings.Contains(ce.Message, "Secret "+e.ns+"/shop-tls") {
			t.Errorf("configz still reports the restored Secret: %+v", ce)
		}
	}
}

// The elected replica writes the gateway Service's address to the
// Ingress's status.loadBalancer: its cluster IP, then the load balancer's
// address once it has one.
func TestIngressThroughServerGetsGatewayServiceAddress(t *testing.T) {
	e := newIngressEnv(t, "ingress-status-srv")
	e.createIngress(e.ingressObj("shop", "shop.example.com", "", path{knetworking.PathTypePrefix, "/", "web"}))

	got := waitIngressStatus(t, e.kube, e.ns, "shop", []knetworking.IngressLoadBalancerIngress{{IP: e.gatewayIP}})
	if got.Generation != 1 {
		t.Errorf("generation %d: the status writer changed the spec", got.Generation)
	}

	svc, err := e.kube.CoreV1().Services(e.ns).Get(ctx, ingressGatewayService, metav1.GetOptions{})
	e.must(err)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.30"}}
	_, err = e.kube.CoreV1().Services(e.ns).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	e.must(err)
	waitIngressStatus(t, e.kube, e.ns, "shop", []knetworking.IngressLoadBalancerIngress{{IP: "203.0.113.30"}})
}
