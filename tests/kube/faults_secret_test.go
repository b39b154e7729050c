package kube

import (
	"os"
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// A gateway's certificate Secret is deleted and created again. While it is
// absent the HTTPS server is left out, as README ## Security ### Secrets
// and "Differences from istiod" say (its listener goes; the HTTP listener
// and its routes stay, the stream stays up, the server keeps running);
// once it is back the listener returns and SDS serves the certificate.
func TestSecretDeletedAndRecreated(t *testing.T) {
	e := newIngressEnv(t, "secretfault")
	istio, err := istioclient.NewForConfig(e.cluster_.RESTConfig())
	e.must(err)
	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "edge-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}
	_, err = e.kube.CoreV1().Secrets(e.ns).Create(ctx, secret, metav1.CreateOptions{})
	e.must(err)
	_, err = istio.NetworkingV1().Gateways(e.ns).Create(ctx, &networkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "edge"},
		Spec: networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
			{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"edge.example.com"}},
			{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"}, Hosts: []string{"edge.example.com"},
				Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "edge-tls"}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = istio.NetworkingV1().VirtualServices(e.ns).Create(ctx, &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "edge"},
		Spec: networking.VirtualService{Hosts: []string{"edge.example.com"}, Gateways: []string{"edge"}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web", Port: &networking.PortSelector{Number: 80}}}},
		}}},
	}, metav1.CreateOptions{})
	e.must(err)
	web := e.cluster("web")
	sds := "kubernetes://edge-tls"

	// The gateway of the Secret's own namespace may have it: its
	// ServiceAccount may list the Secrets there (the gateway Role).
	e.grantGatewayRoleTo(e.ns, "ingressgateway")
	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-gw", Namespace: e.ns, Labels: map[string]string{"istio": "ingressgateway"}}
	gw := e.gatewayAs(node, "ingressgateway", e.ns)
	httpsUp := func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] != nil && s.Listeners["0.0.0.0_80"] != nil && virtualHost(s, "edge.example.com", web)
	}
	waitFor(t, gw, "the HTTPS listener", httpsUp)
	if got := e.fetchSecrets(node, e.ns, "ingressgateway", sds); !slices.Equal(got, []string{sds}) {
		t.Fatalf("SDS for %s sent %v", sds, got)
	}

	e.must(e.kube.CoreV1().Secrets(e.ns).Delete(ctx, "edge-tls", metav1.DeleteOptions{}))
	s := waitFor(t, gw, "the HTTPS server left out without its Secret", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] == nil
	})
	if s.Listeners["0.0.0.0_80"] == nil || !virtualHost(s, "edge.example.com", web) {
		t.Errorf("the HTTP listener or its routes went with the Secret: %s", describe(s))
	}
	if got := e.fetchSecrets(node, e.ns, "ingressgateway", sds); len(got) != 0 {
		t.Errorf("SDS still sends the deleted Secret: %v", got)
	}
	for _, ts := range s.Types {
		if ts.NACKs != 0 {
			t.Errorf("the gateway rejected config while the Secret was absent: %s", describe(s))
			break
		}
	}

	_, err = e.kube.CoreV1().Secrets(e.ns).Create(ctx, secret, metav1.CreateOptions{})
	e.must(err)
	waitFor(t, gw, "the HTTPS listener back with the Secret", httpsUp)
	if got := e.fetchSecrets(node, e.ns, "ingressgateway", sds); !slices.Equal(got, []string{sds}) {
		t.Errorf("SDS for the recreated %s sent %v", sds, got)
	}
	select {
	case <-gw.Done():
		t.Errorf("the gateway's stream ended: %v", gw.Err())
	default:
	}
}
