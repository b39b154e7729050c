package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	knetworking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/apiserver"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Who gets a gateway's TLS keys, against the real API server with real
// tokens, Roles and ReferenceGrants. A key goes to a proxy only when both
// the proxy and the object naming the Secret are entitled to it:
// labels are self-declared, so any pod of the gateway's namespace can
// claim them, and a grant made for one object must not serve another.

// applyExample applies a manifest of manifests/examples with the
// replacements given (old, new, old, new...).
func (e *ingressEnv) applyExample(file string, replace ...string) {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "manifests", "examples", file))
	e.must(err)
	for i := 0; i+1 < len(replace); i += 2 {
		data = bytes.ReplaceAll(data, []byte(replace[i]), []byte(replace[i+1]))
	}
	_, err = e.cluster_.Apply(ctx, apiserver.ApplyOptions{}, bytes.Split(data, []byte("\n---\n"))...)
	e.must(err)
}

// waitRBAC waits until the API server's RBAC lets ServiceAccount ns/sa do
// verb on Secret name of namespace secretNS ("" for every Secret): it
// learns bindings through its own informer.
func (e *ingressEnv) waitRBAC(ns, sa, verb, secretNS, name string) {
	e.t.Helper()
	poll.Until(e.t, "RBAC to let "+ns+"/"+sa+" "+verb+" Secrets of "+secretNS, func() bool {
		r, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":" + sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: secretNS, Verb: verb, Resource: "secrets", Name: name},
		}}, metav1.CreateOptions{})
		e.must(err)
		return r.Status.Allowed
	}, apiPoll...)
}

// grantGatewayRole applies manifests/examples/gateway-role.yaml: the
// istio-system gateway's ServiceAccount may list the Secrets of its
// namespace, as Istio's gateway chart grants.
func (e *ingressEnv) grantGatewayRole() {
	e.t.Helper()
	e.applyExample("gateway-role.yaml")
	ns, sa, _ := strings.Cut(gatewayServiceAccount, "/")
	e.waitRBAC(ns, sa, "list", ns, "")
}

// grantGatewayRoleTo applies manifests/examples/gateway-role.yaml for
// ServiceAccount ns/sa: it may list the Secrets of its namespace.
func (e *ingressEnv) grantGatewayRoleTo(ns, sa string) {
	e.t.Helper()
	e.applyExample("gateway-role.yaml", "istio-system", ns, "istio-ingressgateway-service-account", sa)
	e.waitRBAC(ns, sa, "list", ns, "")
}

// dialAudience connects node to the secure port with a real token of
// ServiceAccount ns/sa for audience.
func (e *ingressEnv) dialAudience(node adsc.NodeOptions, ns, sa, audience string) *adsc.Client {
	e.t.Helper()
	dctx, cancel := contextWithTimeout()
	defer cancel()
	c, err := adsc.Dial(dctx, adsc.Config{Address: e.server.SecureGRPCAddr().String(), Node: adsc.IstioNode(node),
		TLS: e.tlsConfig(), Token: e.cluster_.Token(e.t, ns, sa, []string{audience}, time.Hour)})
	e.must(err)
	e.t.Cleanup(func() { c.Close() })
	return c
}

// tlsSecret creates a kubernetes.io/tls Secret holding the test
// certificate, deleted after the test.
func (e *ingressEnv) tlsSecret(ns, name string) {
	e.t.Helper()
	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	_, err = e.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	e.t.Cleanup(func() { _ = e.kube.CoreV1().Secrets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// debugView reads the debug pages with one debug admin token for the
// whole test (each new token costs a TokenReview, which the debug port
// limits per client).
type debugView struct {
	e     *ingressEnv
	token string
}

func newDebugView(e *ingressEnv) *debugView {
	return &debugView{e: e, token: e.debugToken()}
}

// debugTokens keeps one debug admin token per ingressEnv: a new token for
// every request would cost a TokenReview each, which the debug port
// limits per client.
var debugTokens sync.Map // *ingressEnv -> string

// debugToken is e's debug admin token, made once.
func (e *ingressEnv) debugToken() string {
	if tok, ok := debugTokens.Load(e); ok {
		return tok.(string)
	}
	tok := debugAdminToken(e.t, e.ns)
	debugTokens.Store(e, tok)
	e.t.Cleanup(func() { debugTokens.Delete(e) })
	return tok
}

func (d *debugView) get(pathAndQuery string, v any) string {
	d.e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+d.e.server.HTTPAddr().String()+pathAndQuery, nil)
	d.e.must(err)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	d.e.must(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d.e.must(err)
	if resp.StatusCode != http.StatusOK {
		d.e.t.Fatalf("GET %s: %s: %s", pathAndQuery, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		d.e.t.Fatalf("GET %s: decoding %s: %v", pathAndQuery, body, err)
	}
	return string(body)
}

// refusal returns the reason /debug/configz gives for refusing secret
// ("NS/NAME") to node's proxy, "" when it does not.
func (d *debugView) refusal(node adsc.NodeOptions, secret string) string {
	var cz struct {
		SecretRefusals []debugapi.SecretRefusalz `json:"secretRefusals"`
	}
	d.get("/debug/configz", &cz)
	for _, g := range cz.SecretRefusals {
		if !slices.Contains(g.Proxies, adsc.NodeID(node)) {
			continue
		}
		for _, r := range g.Refused {
			if r.Secret == secret {
				return r.Reason
			}
		}
	}
	return ""
}

// secrets returns the names of the secrets /debug/config_dump shows for
// node's proxy, and the raw dump.
func (d *debugView) secrets(node adsc.NodeOptions) ([]string, string) {
	var dump struct {
		Configs []struct {
			Type    string `json:"@type"`
			Secrets []struct {
				Name string `json:"name"`
			} `json:"dynamicActiveSecrets"`
		} `json:"configs"`
	}
	raw := d.get("/debug/config_dump?proxyID="+url.QueryEscape(adsc.NodeID(node)), &dump)
	var names []string
	for _, c := range dump.Configs {
		if strings.HasSuffix(c.Type, "envoy.admin.v3.SecretsConfigDump") {
			for _, s := range c.Secrets {
				names = append(names, s.Name)
			}
		}
	}
	return names, raw
}

// debugPagePoll waits asking at most every 200 ms (it reads debug pages).
var debugPagePoll = []poll.Option{poll.Timeout(waitTimeout), poll.Interval(200 * time.Millisecond)}

// The sidecar-identity key request: a pod of the gateway's namespace
// holding a token of its own ServiceAccount for audience istio-ca (every
// injected sidecar has one) claims the gateway's labels. It gets the
// plain listener, and no key, not even asking for it by name, because
// its ServiceAccount may not list the Secrets of the namespace; the
// gateway's own ServiceAccount, which the gateway Role lets list them,
// gets its certificate.
func TestSidecarIdentityGetsNoGatewayKey(t *testing.T) {
	e := newIngressEnv(t, "sidecarkey", "istio-system")
	istio, err := istioclient.NewForConfig(e.cluster_.RESTConfig())
	e.must(err)
	sysSecret := e.ns + "-gw"
	e.tlsSecret("istio-system", sysSecret)
	e.grantGatewayRole()
	_, err = istio.NetworkingV1().Gateways(e.ns).Create(ctx, &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "public"},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
			{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"public.example.com"}},
			{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"}, Hosts: []string{"public.example.com"},
				Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: sysSecret}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	resource := "kubernetes://" + sysSecret
	dv := newDebugView(e)

	// The gateway itself.
	gwNode := gatewayNode("gw-0")
	real := e.gateway(gwNode.PodName)
	waitFor(t, real, "the gateway's HTTPS listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })
	poll.Until(t, "the gateway's certificate sent to it", func() bool {
		names, _ := dv.secrets(gwNode)
		return slices.Equal(names, []string{resource})
	}, debugPagePoll...)

	// The sidecar identity, same namespace and labels.
	sidecarNode := adsc.NodeOptions{IP: "127.0.0.1", PodName: "app-0", Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	sidecar := e.dialAudience(sidecarNode, "istio-system", e.ns+"-app", "istio-ca")
	noKey := func(when string) {
		t.Helper()
		s := waitFor(t, sidecar, "the sidecar's plain listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_80"] != nil })
		if s.Listeners["0.0.0.0_443"] != nil {
			t.Errorf("%s: the sidecar identity got the HTTPS listener: %s", when, describe(s))
		}
		if names, raw := dv.secrets(sidecarNode); len(names) != 0 || strings.Contains(raw, "PRIVATE KEY") {
			t.Errorf("%s: the sidecar identity was sent secrets %v", when, names)
		}
	}
	noKey("first config")
	poll.Until(t, "the sidecar's refusal to be reported", func() bool {
		return strings.Contains(dv.refusal(sidecarNode, "istio-system/"+sysSecret), "may neither list the Secrets of namespace istio-system")
	}, debugPagePoll...)
	noKey("once reviewed")
	if got := e.fetchSecretsAs(sidecarNode, "istio-system", e.ns+"-app", "istio-ca", resource, "kubernetes://istio-system/"+sysSecret); len(got) != 0 {
		t.Errorf("the sidecar identity asking by name got %v", got)
	}
	if names, _ := dv.secrets(gwNode); !slices.Equal(names, []string{resource}) {
		t.Errorf("the gateway lost its certificate: %v", names)
	}
}

// The same for a Gateway API Gateway whose proxies Wayfinder deploys:
// its Secret goes to the proxies running as the ServiceAccount the
// deployer made for it (GATEWAY-CLASS), not to another ServiceAccount of
// the namespace claiming the gateway-name label.
func TestSidecarIdentityGetsNoDeployedGatewayKey(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "sidecargw")
	e.tlsSecret(e.ns, "edge-tls")
	host := gw.Hostname("secure.example.com")
	_, err := gwc.GatewayV1().Gateways(e.ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType, Hostname: &host, TLS: &gw.ListenerTLSConfig{
				CertificateRefs: []gw.SecretObjectReference{{Name: "edge-tls"}}}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	labels := map[string]string{gatewayapi.GatewayNameLabel: "edge"}
	deployedSA := "edge-" + className
	dv := newDebugView(e)
	proxyNode := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-0", Namespace: e.ns, Labels: labels}
	proxy := e.gatewayAs(proxyNode, deployedSA, e.ns)
	waitFor(t, proxy, "the deployed proxy's HTTPS listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })
	poll.Until(t, "the Gateway's certificate sent to its proxy", func() bool {
		names, _ := dv.secrets(proxyNode)
		return slices.Equal(names, []string{"kubernetes://edge-tls"})
	}, debugPagePoll...)

	sidecarNode := adsc.NodeOptions{IP: "127.0.0.1", PodName: "app-0", Namespace: e.ns, Labels: labels}
	sidecar := e.dialAudience(sidecarNode, e.ns, "app", "istio-ca")
	noKey := func(when string) {
		t.Helper()
		s := waitFor(t, sidecar, "the sidecar's plain listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_80"] != nil })
		if s.Listeners["0.0.0.0_443"] != nil {
			t.Errorf("%s: the sidecar identity got the HTTPS listener: %s", when, describe(s))
		}
		if names, raw := dv.secrets(sidecarNode); len(names) != 0 || strings.Contains(raw, "PRIVATE KEY") {
			t.Errorf("%s: the sidecar identity was sent secrets %v", when, names)
		}
	}
	noKey("first config")
	poll.Until(t, "the sidecar's refusal to be reported", func() bool {
		return strings.Contains(dv.refusal(sidecarNode, e.ns+"/edge-tls"), "ServiceAccount "+e.ns+"/"+deployedSA+", not "+e.ns+"/app")
	}, debugPagePoll...)
	noKey("once reviewed")
	if got := e.fetchSecretsAs(sidecarNode, e.ns, "app", "istio-ca", "kubernetes://edge-tls"); len(got) != 0 {
		t.Errorf("the sidecar identity asking by name got %v", got)
	}
}

// The confused deputy: bank lets the shared ingress get bank-tls, as
// manifests/examples/gateway-secret-access.yaml teaches, so that bank's
// Ingress is served with it. A tenant's Istio Gateway naming
// bank/bank-tls for its own host, and a tenant's DestinationRule naming
// it as an upstream client certificate, get nothing from that grant:
// Istio config names the proxy's namespace's Secrets only. bank's Ingress
// still gets its certificate.
func TestTenantConfigCannotBorrowAGrantedSecret(t *testing.T) {
	const bank = "bank"
	e := newIngressEnv(t, "tenant", "istio-system", bank)
	ensureNamespace(t, e.cluster_, bank)
	istio, err := istioclient.NewForConfig(e.cluster_.RESTConfig())
	e.must(err)
	e.tlsSecret(bank, "bank-tls")
	e.applyExample("gateway-secret-access.yaml", "namespace: shop", "namespace: "+bank, "shop-tls", "bank-tls")
	ns, sa, _ := strings.Cut(gatewayServiceAccount, "/")
	e.waitRBAC(ns, sa, "get", bank, "bank-tls")
	backendIn(e, bank, "bank-web", "10.12.0.1")

	// bank's own Ingress: the grant's purpose.
	_, err = e.kube.NetworkingV1().Ingresses(bank).Create(ctx, &knetworking.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-bank"},
		Spec: knetworking.IngressSpec{
			IngressClassName: ptr.To(e.class),
			TLS:              []knetworking.IngressTLS{{Hosts: []string{"bank.example.com"}, SecretName: "bank-tls"}},
			Rules: []knetworking.IngressRule{{Host: "bank.example.com", IngressRuleValue: knetworking.IngressRuleValue{HTTP: &knetworking.HTTPIngressRuleValue{
				Paths: []knetworking.HTTPIngressPath{{Path: "/", PathType: ptr.To(knetworking.PathTypePrefix), Backend: knetworking.IngressBackend{
					Service: &knetworking.IngressServiceBackend{Name: "bank-web", Port: knetworking.ServiceBackendPort{Number: 80}}}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		_ = e.kube.NetworkingV1().Ingresses(bank).Delete(context.Background(), e.ns+"-bank", metav1.DeleteOptions{})
	})

	// The tenant's Gateway and DestinationRule naming bank's Secret.
	_, err = istio.NetworkingV1().Gateways(e.ns).Create(ctx, &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "evil"},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
			{Port: &networking.Port{Number: 8443, Name: "https-evil", Protocol: "HTTPS"}, Hosts: []string{"evil.example.com"},
				Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: bank + "/bank-tls"}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = istio.NetworkingV1().VirtualServices(e.ns).Create(ctx, &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "evil"},
		Spec: networking.VirtualService{Hosts: []string{"evil.example.com"}, Gateways: []string{"evil"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 80}}}},
		}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = istio.NetworkingV1().DestinationRules(e.ns).Create(ctx, &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Name: "web-as-bank"},
		Spec: networking.DestinationRule{Host: "web", TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{
			Mode: networking.ClientTLSSettings_MUTUAL, CredentialName: bank + "/bank-tls", InsecureSkipVerify: wrapperspb.Bool(true)}}},
	}, metav1.CreateOptions{})
	e.must(err)

	dv := newDebugView(e)
	sysNode := gatewayNode("gw-0")
	sys := e.gateway(sysNode.PodName)
	resource := "kubernetes://" + bank + "/bank-tls"
	s := waitFor(t, sys, "bank's HTTPS listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })
	poll.Until(t, "bank's certificate sent for bank's Ingress", func() bool {
		names, _ := dv.secrets(sysNode)
		return slices.Contains(names, resource)
	}, debugPagePoll...)
	if s := waitFor(t, sys, "the config bank's certificate came with", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil }); s.Listeners["0.0.0.0_8443"] != nil {
		t.Errorf("the tenant's server is served with bank's certificate: %s", describe(s))
	}
	// The tenant's DestinationRule is reported, and its clusters not
	// built, once the server has it.
	poll.Until(t, "the tenant's DestinationRule to be reported", func() bool {
		var cz map[string]any
		body := dv.get("/debug/configz", &cz)
		return strings.Contains(body, e.ns+"/web-as-bank") && strings.Contains(body, "names a namespace")
	}, debugPagePoll...)
	web := e.cluster("web")
	s = waitFor(t, sys, "the config without the tenant's cluster", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] != nil && s.Clusters[web] == nil
	})
	if s.Listeners["0.0.0.0_8443"] != nil {
		t.Errorf("the tenant's server is served with bank's certificate: %s", describe(s))
	}
	// No cluster presents bank's certificate: the tenant's rule names a
	// namespace, so its clusters are not built.
	for name, c := range s.Clusters {
		ts := c.GetTransportSocket().GetTypedConfig()
		if ts == nil {
			continue
		}
		up := &tlsv3.UpstreamTlsContext{}
		if ts.UnmarshalTo(up) != nil {
			continue
		}
		for _, sds := range up.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			if strings.Contains(sds.GetName(), "bank-tls") {
				t.Errorf("cluster %s presents %s", name, sds.GetName())
			}
		}
	}
	poll.Until(t, "the tenant Gateway's refusal to be reported", func() bool {
		return strings.Contains(dv.refusal(sysNode, bank+"/bank-tls"), "Gateway "+e.ns+"/evil may name Secrets of the proxy's namespace istio-system only")
	}, debugPagePoll...)
}

// backendIn creates Service name of namespace ns (port 80 "http" to 8080)
// with an EndpointSlice of ready endpoints at ips.
func backendIn(e *ingressEnv, ns, name string, ips ...string) {
	e.t.Helper()
	_, err := e.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	e.must(err)
	e.t.Cleanup(func() { _ = e.kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	_, err = e.kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, es, metav1.CreateOptions{})
	e.must(err)
	e.t.Cleanup(func() {
		_ = e.kube.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), name+"-1", metav1.DeleteOptions{})
	})
}
