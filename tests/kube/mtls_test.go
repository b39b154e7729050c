package kube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// newCA returns a fresh self-signed CA certificate in PEM.
func newCA(t *testing.T, cn string) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// dumpedSecretVersions maps the secrets /debug/config_dump shows for the
// proxy to their versions.
func (e *ingressEnv) dumpedSecretVersions(node adsc.NodeOptions) map[string]string {
	e.t.Helper()
	var dump struct {
		Configs []struct {
			Type    string `json:"@type"`
			Secrets []struct {
				Name    string `json:"name"`
				Version string `json:"versionInfo"`
			} `json:"dynamicActiveSecrets"`
		} `json:"configs"`
	}
	e.getJSON("/debug/config_dump?proxyID="+url.QueryEscape(adsc.NodeID(node)), &dump)
	out := map[string]string{}
	for _, c := range dump.Configs {
		if strings.HasSuffix(c.Type, "envoy.admin.v3.SecretsConfigDump") {
			for _, s := range c.Secrets {
				out[s.Name] = s.Version
			}
		}
	}
	return out
}

// A MUTUAL Gateway server verifies clients with the CA of its
// credentialName Secret, sent over SDS as the credential's resource name
// with -cacert (kubernetes://NAME-cacert). Rotating the CA in
// the Secret changes that secret alone: the listener the gateway holds
// keeps its version.
func TestMutualTLSCARotationReachesGatewayThroughSDSAlone(t *testing.T) {
	e := newIngressEnv(t, "mtls", "istio-system")
	istio, err := istioclient.NewForConfig(cluster.Get(t).RESTConfig())
	e.must(err)
	node := gatewayNode("mtls-gw")
	gw := e.gateway(node.PodName)

	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	// The gateway runs in istio-system: the Secret (its certificate and,
	// in ca.crt, its CA) is of that namespace, named uniquely there, and
	// the gateway's ServiceAccount may list the Secrets of its namespace
	// (manifests/examples/gateway-role.yaml).
	ensureNamespace(t, e.cluster_, "istio-system")
	secretName := e.ns + "-mtls"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key, "ca.crt": newCA(t, "first-ca")}}
	_, err = e.kube.CoreV1().Secrets("istio-system").Create(ctx, secret, metav1.CreateOptions{})
	e.must(err)
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Secrets("istio-system").Delete(context.Background(), secretName, metav1.DeleteOptions{})
	})
	e.grantGatewayRole()
	_, err = istio.NetworkingV1().Gateways(e.ns).Create(ctx, &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "mtls"},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{{
			Port:  &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"},
			Hosts: []string{"mtls.example.com"},
			Tls:   &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_MUTUAL, CredentialName: secretName},
		}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = istio.NetworkingV1().VirtualServices(e.ns).Create(ctx, &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "mtls"},
		Spec: networking.VirtualService{Hosts: []string{"mtls.example.com"}, Gateways: []string{"mtls"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 80}}}},
		}}},
	}, metav1.CreateOptions{})
	e.must(err)

	caName := "kubernetes://" + secretName + "-cacert"
	certName := "kubernetes://" + secretName
	s := waitFor(t, gw, "the MUTUAL listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })
	var tlsCtx tlsv3.DownstreamTlsContext
	e.must(s.Listeners["0.0.0.0_443"].GetFilterChains()[0].GetTransportSocket().GetTypedConfig().UnmarshalTo(&tlsCtx))
	if got := tlsCtx.GetCommonTlsContext().GetCombinedValidationContext().GetValidationContextSdsSecretConfig().GetName(); got != caName || !tlsCtx.GetRequireClientCertificate().GetValue() {
		t.Fatalf("validation context over SDS %q (require client certificate %v), want %s", got, tlsCtx.GetRequireClientCertificate(), caName)
	}
	before := e.dumpedSecretVersions(node)
	if before[caName] == "" || before[certName] == "" {
		t.Fatalf("config_dump secrets %v, want the certificate and %s", before, caName)
	}
	listenerVersion := s.Version(adsc.ListenerType)

	secret.Data["ca.crt"] = newCA(t, "second-ca")
	_, err = e.kube.CoreV1().Secrets("istio-system").Update(ctx, secret, metav1.UpdateOptions{})
	e.must(err)
	var after map[string]string
	// Polled: config_dump is the only window onto SDS (the Envoy-like
	// client does not fetch secrets), so there is no event to wait on.
	poll.Until(t, "the CA secret's version "+before[caName]+" to change after the rotation", func() bool {
		after = e.dumpedSecretVersions(node)
		return after[caName] != "" && after[caName] != before[caName]
	}, apiPoll...)
	if after[certName] != before[certName] {
		t.Errorf("the certificate secret changed too: %v -> %v", before, after)
	}
	// A route change afterwards is a barrier: by the time it has arrived,
	// a listener re-sent for the rotation would have too.
	_, err = istio.NetworkingV1().VirtualServices(e.ns).Update(ctx, &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "mtls", ResourceVersion: mustVS(t, istio, e.ns).ResourceVersion},
		Spec: networking.VirtualService{Hosts: []string{"mtls.example.com"}, Gateways: []string{"mtls"}, Http: []*networking.HTTPRoute{{
			Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/barrier"}}}},
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 80}}}},
		}}},
	}, metav1.UpdateOptions{})
	e.must(err)
	s = waitFor(t, gw, "the barrier route", func(s adsc.State) bool {
		rc := s.Routes["https.443.https.mtls."+e.ns]
		return rc != nil && strings.Contains(rc.String(), "/barrier")
	})
	if got := s.Version(adsc.ListenerType); got != listenerVersion {
		t.Errorf("listeners re-sent on a CA rotation: version %s -> %s", listenerVersion, got)
	}
}

func mustVS(t *testing.T, istio istioclient.Interface, ns string) *networkingv1.VirtualService {
	t.Helper()
	vs, err := istio.NetworkingV1().VirtualServices(ns).Get(ctx, "mtls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return vs
}
