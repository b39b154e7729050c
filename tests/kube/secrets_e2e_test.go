package kube

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	knetworking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// fetchSecrets opens its own ADS stream to the secure port as node, with
// a real token of ServiceAccount ns/sa, asks for the SDS secrets names by
// name, as a gateway would, and returns the names of those sent.
func (e *ingressEnv) fetchSecrets(node adsc.NodeOptions, ns, sa string, names ...string) []string {
	e.t.Helper()
	return e.fetchSecretsAs(node, ns, sa, "wayfinder", names...)
}

// fetchSecretsAs is fetchSecrets with a token for audience.
func (e *ingressEnv) fetchSecretsAs(node adsc.NodeOptions, ns, sa, audience string, names ...string) []string {
	e.t.Helper()
	token := e.cluster_.Token(e.t, ns, sa, []string{audience}, time.Hour)
	cc, err := grpc.NewClient(e.server.SecureGRPCAddr().String(),
		grpc.WithTransportCredentials(credentials.NewTLS(e.tlsConfig())), grpc.WithPerRPCCredentials(bearer(token)))
	e.must(err)
	defer cc.Close()
	sctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stream, err := discoverygrpc.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(sctx)
	e.must(err)
	e.must(stream.Send(&discoverygrpc.DiscoveryRequest{Node: adsc.IstioNode(node), TypeUrl: resourcev3.SecretType, ResourceNames: names}))
	resp, err := stream.Recv()
	e.must(err)
	var got []string
	for _, r := range resp.GetResources() {
		msg, err := r.UnmarshalNew()
		e.must(err)
		if n, ok := msg.(interface{ GetName() string }); ok {
			got = append(got, n.GetName())
		}
	}
	return got
}

// The end-to-end case, with real tokens on the secure port: a
// gateway of namespace tenant, labelled istio: ingressgateway and so
// selected by a Gateway whose servers name istio-system's certificate,
// never receives that key, not even asking for it by name; istio-system's
// gateway, whose ServiceAccount the gateway Role
// (manifests/examples/gateway-role.yaml) lets list the Secrets of its
// namespace, receives its own. A tenant's Ingress TLS Secret reaches the
// tenant's own gateway once it has that Role in its namespace, and the
// istio-system gateway only once a Role and RoleBinding
// (manifests/examples/gateway-secret-access.yaml) let its ServiceAccount
// get it; until then the refusal shows in /debug/configz.
func TestGatewaySecretsFollowRealTokens(t *testing.T) {
	e := newIngressEnv(t, "tenant", "istio-system")
	tenant := e.ns
	istio, err := istioclient.NewForConfig(e.cluster_.RESTConfig())
	e.must(err)
	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)

	e.grantGatewayRole()
	// istio-system's certificate, named uniquely in the shared namespace.
	sysSecret := tenant + "-gw"
	_, err = e.kube.CoreV1().Secrets("istio-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sysSecret}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Secrets("istio-system").Delete(context.Background(), sysSecret, metav1.DeleteOptions{})
	})
	https := func(port uint32, name, host, credential string) *networking.Server {
		return &networking.Server{Port: &networking.Port{Number: port, Name: name, Protocol: "HTTPS"}, Hosts: []string{host},
			Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: credential}}
	}
	_, err = istio.NetworkingV1().Gateways(tenant).Create(ctx, &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "public"},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
			{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"public.example.com"}},
			// The proxy's own namespace's Secret, as Istio resolves it.
			https(443, "https", "public.example.com", sysSecret),
			// istio-system's, named.
			https(8443, "https-named", "public.example.com", "istio-system/"+sysSecret),
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = istio.NetworkingV1().VirtualServices(tenant).Create(ctx, &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "public"},
		Spec: networking.VirtualService{Hosts: []string{"public.example.com"}, Gateways: []string{"public"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 80}}}},
		}}},
	}, metav1.CreateOptions{})
	e.must(err)
	web := e.cluster("web")
	own, named := "kubernetes://"+sysSecret, "kubernetes://istio-system/"+sysSecret

	// istio-system's gateway: both servers, and both secrets.
	sysNode := gatewayNode("sys-gw")
	sys := e.gateway(sysNode.PodName)
	waitFor(t, sys, "istio-system's HTTPS listeners", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] != nil && s.Listeners["0.0.0.0_8443"] != nil && virtualHost(s, "public.example.com", web)
	})
	if names, _ := e.dumpedSecrets(sysNode); !slices.Equal(names, []string{named, own}) {
		t.Errorf("istio-system's gateway was sent secrets %v, want [%s %s]", names, named, own)
	}
	sysAccount := strings.TrimPrefix(gatewayServiceAccount, "istio-system/")
	if got := e.fetchSecrets(sysNode, "istio-system", sysAccount, own, named); !slices.Equal(got, []string{named, own}) {
		t.Errorf("istio-system's gateway asking by name got %v", got)
	}

	// The tenant's gateway: the plain server only; no key, even by name.
	tenantNode := adsc.NodeOptions{IP: "127.0.0.1", PodName: "tenant-gw", Namespace: tenant, Labels: map[string]string{"istio": "ingressgateway"}}
	tg := e.gatewayAs(tenantNode, "ingressgateway", tenant)
	s := waitFor(t, tg, "the tenant gateway's HTTP listener", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_80"] != nil && virtualHost(s, "public.example.com", web)
	})
	if s.Listeners["0.0.0.0_443"] != nil || s.Listeners["0.0.0.0_8443"] != nil {
		t.Errorf("the tenant gateway got a listener needing istio-system's key: %s", describe(s))
	}
	if names, raw := e.dumpedSecrets(tenantNode); len(names) != 0 || strings.Contains(raw, "PRIVATE KEY") {
		t.Errorf("the tenant gateway was sent secrets %v", names)
	}
	if got := e.fetchSecrets(tenantNode, tenant, "ingressgateway", own, named); len(got) != 0 {
		t.Errorf("the tenant gateway asking by name got %v", got)
	}
	if !refusedIn(e, tenantNode, "istio-system/"+sysSecret) {
		t.Errorf("/debug/configz does not report istio-system/%s refused to the tenant gateway", sysSecret)
	}

	// A tenant's Ingress TLS Secret: the tenant's own gateway may have it
	// (its namespace); istio-system's only once RBAC grants it.
	_, err = e.kube.CoreV1().Secrets(tenant).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}, metav1.CreateOptions{})
	e.must(err)
	e.createIngress(e.ingressObj("shop", "shop.example.com", "shop-tls", path{knetworking.PathTypePrefix, "/", "web"}))
	shop := "kubernetes://" + tenant + "/shop-tls"
	waitFor(t, sys, "the Ingress's HTTP route", func(s adsc.State) bool { return virtualHost(s, "shop.example.com", web) })
	poll.Until(t, "the Ingress's Secret refused to istio-system's gateway", func() bool { return refusedIn(e, sysNode, tenant+"/shop-tls") }, apiPoll...)
	if names, _ := e.dumpedSecrets(sysNode); slices.Contains(names, shop) {
		t.Fatalf("istio-system's gateway got %s before any grant", shop)
	}
	if names, _ := e.dumpedSecrets(tenantNode); slices.Contains(names, shop) {
		t.Fatalf("the tenant gateway got %s before its ServiceAccount may list the Secrets of %s", shop, tenant)
	}
	e.grantGatewayRoleTo(tenant, "ingressgateway")
	poll.Until(t, "the tenant gateway serving its own namespace's Ingress Secret", func() bool {
		names, _ := e.dumpedSecrets(tenantNode)
		return slices.Contains(names, shop)
	}, apiPoll...)

	e.grantSecret("shop-tls")
	poll.Until(t, "istio-system's gateway granted "+shop, func() bool {
		names, _ := e.dumpedSecrets(sysNode)
		return slices.Contains(names, shop)
	}, apiPoll...)
	if got := e.fetchSecrets(sysNode, "istio-system", sysAccount, shop); !slices.Equal(got, []string{shop}) {
		t.Errorf("istio-system's gateway asking for %s got %v", shop, got)
	}
}

// refusedIn reports whether /debug/configz lists secret ("NS/NAME") as
// refused to node's proxy.
func refusedIn(e *ingressEnv, node adsc.NodeOptions, secret string) bool {
	var cz struct {
		SecretRefusals []debugapi.SecretRefusalz `json:"secretRefusals"`
	}
	e.getJSON("/debug/configz", &cz)
	for _, g := range cz.SecretRefusals {
		if !slices.Contains(g.Proxies, adsc.NodeID(node)) {
			continue
		}
		for _, r := range g.Refused {
			if r.Secret == secret {
				return true
			}
		}
	}
	return false
}
