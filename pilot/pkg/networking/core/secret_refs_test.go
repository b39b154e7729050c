package core

import (
	"os"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
)

// A terminating TLS server that gets no filter chain (no VirtualService
// has a TCP route for it) is left out of the listeners, and its Secret is
// not sent either: no listener would ask for it, and key material goes
// only where it is used. The HTTPS server's Secret still is. Found by
// FuzzTranslateGenerated.
func TestSecretOfServerLeftOutIsNotSent(t *testing.T) {
	cert, err := os.ReadFile("../listener/testdata/cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("../listener/testdata/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	push := pushFrom(t, `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["*"]
    tls: {mode: SIMPLE, credentialName: web-cert}
  - port: {number: 9443, name: tls, protocol: TLS}
    hosts: ["*"]
    tls: {mode: SIMPLE, credentialName: tcp-cert}
`)
	pair := map[string][]byte{"tls.crt": cert, "tls.key": key}
	secrets := kubeObjects{secrets: map[string]map[string][]byte{"istio-system/web-cert": pair, "istio-system/tcp-cert": pair}}
	scope := model.SecretScope{Identity: &model.Identity{Namespace: "istio-system", ServiceAccount: "gw", Method: model.MethodToken}}
	gr := BuildGatewayWithSecrets(push, push.GatewaysForProxy(&model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: defaultProxyLabels}), secrets, scope)

	var listeners, sent []string
	for _, l := range gr.Listeners {
		listeners = append(listeners, l.GetName())
	}
	for _, s := range gr.Secrets {
		sent = append(sent, s.GetName())
	}
	if len(listeners) != 1 || listeners[0] != "0.0.0.0_443" {
		t.Fatalf("listeners %v, want only 0.0.0.0_443 (port 9443 has no TCP route)", listeners)
	}
	if len(sent) != 1 || sent[0] != "kubernetes://web-cert" {
		t.Errorf("secrets sent %v, want only kubernetes://web-cert", sent)
	}
	checkResources(t, translation{gateway: gr, services: BuildServices(push)})
}
