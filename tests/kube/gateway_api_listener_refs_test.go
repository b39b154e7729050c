package kube

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// gatewayCondition polls Gateway ns/name until its condition typ (of the
// listener when listener is not "") has status and reason, and its
// message contains text.
func gatewayCondition(t *testing.T, gwc gwclient.Interface, ns, name, listener, typ string, status metav1.ConditionStatus, reason, text string) {
	t.Helper()
	what := fmt.Sprintf("Gateway %s/%s %s %s %s/%s %q", ns, name, listener, typ, status, reason, text)
	poll.Seen(t, what, func() (string, bool) {
		g, err := gwc.GatewayV1().Gateways(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		conds := g.Status.Conditions
		if listener != "" {
			l := listenerStatus(g, listener)
			if l == nil {
				return fmt.Sprintf("no listener %s in %+v", listener, g.Status.Listeners), false
			}
			conds = l.Conditions
		}
		d, ok := condIs(conds, typ, status, reason)
		for _, c := range conds {
			if c.Type == typ && !strings.Contains(c.Message, text) {
				ok = false
			}
			if c.Type == typ && c.ObservedGeneration != g.Generation {
				ok = false
			}
		}
		return d, ok
	}, apiPoll...)
}

// A listener's certificateRef is resolved against the Secret itself, on a
// real API server: a Secret that does not exist, then one whose data is
// not a certificate (the conformance suite's "Hello world"), leave the
// listener ResolvedRefs False with InvalidCertificateRef and Programmed
// False, and its proxy without the HTTPS listener; the Secret fixed, the
// same conversion that hears of it serves the listener, and the status
// says so. No message quotes the Secret's data.
func TestGatewayAPICertificateRefResolvedAgainstSecret(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwcertref")
	ns := e.ns
	host := gw.Hostname("secure.example.com")
	_, err := gwc.GatewayV1().Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType, Hostname: &host, TLS: &gw.ListenerTLSConfig{
				CertificateRefs: []gw.SecretObjectReference{{Name: "site"}}}},
		}},
	}, metav1.CreateOptions{})
	e.must(err)
	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, "edge-"+className, ns)

	// No Secret.
	gatewayCondition(t, gwc, ns, "edge", "https", "ResolvedRefs", metav1.ConditionFalse, "InvalidCertificateRef", "does not exist")
	gatewayCondition(t, gwc, ns, "edge", "https", "Programmed", metav1.ConditionFalse, "Invalid", "")
	gatewayCondition(t, gwc, ns, "edge", "https", "Accepted", metav1.ConditionTrue, "Accepted", "")
	s := waitFor(t, proxy, "the HTTP listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_80"] != nil })
	if s.Listeners["0.0.0.0_443"] != nil {
		t.Errorf("the HTTPS listener is served without its Secret: %s", describe(s))
	}

	// A Secret that holds no certificate.
	hello := []byte("Hello world\n")
	_, err = e.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: hello, corev1.TLSPrivateKeyKey: hello}}, metav1.CreateOptions{})
	e.must(err)
	gatewayCondition(t, gwc, ns, "edge", "https", "ResolvedRefs", metav1.ConditionFalse, "InvalidCertificateRef", "holds no PEM certificate")
	g, err := gwc.GatewayV1().Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
	e.must(err)
	for _, c := range listenerStatus(g, "https").Conditions {
		if strings.Contains(c.Message, "Hello") {
			t.Errorf("the status quotes the Secret's data: %q", c.Message)
		}
	}

	// Fixed: served.
	cert, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/cert.pem")
	e.must(err)
	key, err := os.ReadFile("../../pilot/pkg/networking/listener/testdata/key.pem")
	e.must(err)
	sec, err := e.kube.CoreV1().Secrets(ns).Get(ctx, "site", metav1.GetOptions{})
	e.must(err)
	sec.Data = map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}
	_, err = e.kube.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{})
	e.must(err)
	gatewayCondition(t, gwc, ns, "edge", "https", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", "")
	gatewayCondition(t, gwc, ns, "edge", "https", "Programmed", metav1.ConditionTrue, "Programmed", "")
	waitFor(t, proxy, "the HTTPS listener once its Secret is fixed", func(s adsc.State) bool { return s.Listeners["0.0.0.0_443"] != nil })

	// Deleted again: withdrawn.
	e.must(e.kube.CoreV1().Secrets(ns).Delete(ctx, "site", metav1.DeleteOptions{}))
	gatewayCondition(t, gwc, ns, "edge", "https", "ResolvedRefs", metav1.ConditionFalse, "InvalidCertificateRef", "does not exist")
	waitFor(t, proxy, "the HTTPS listener withdrawn with its Secret", func(s adsc.State) bool {
		return s.Listeners["0.0.0.0_443"] == nil && s.Listeners["0.0.0.0_80"] != nil
	})
}

// spec.infrastructure.parametersRef, on a real API server: a kind other
// than a ConfigMap, or a ConfigMap that does not exist, rejects the
// Gateway (Accepted False, InvalidParameters: conformance
// GatewayInvalidParametersRef); the ConfigMap created, it is accepted.
// The GatewayClass lists the supported features in its status.
func TestGatewayAPIParametersRef(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwparams")
	ns := e.ns
	create := func(name string, ref gw.LocalParametersReference) {
		t.Helper()
		_, err := gwc.GatewayV1().Gateways(ns).Create(ctx, &gw.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className),
				Listeners:      []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
				Infrastructure: &gw.GatewayInfrastructure{ParametersRef: &ref}},
		}, metav1.CreateOptions{})
		e.must(err)
	}
	create("invalid", gw.LocalParametersReference{Group: "invalid.io", Kind: "InvalidParameters", Name: "invalid"})
	create("configmap", gw.LocalParametersReference{Group: "", Kind: "ConfigMap", Name: "params"})
	gatewayCondition(t, gwc, ns, "invalid", "", "Accepted", metav1.ConditionFalse, "InvalidParameters", "not supported")
	gatewayCondition(t, gwc, ns, "configmap", "", "Accepted", metav1.ConditionFalse, "InvalidParameters", "does not exist")
	_, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "params"},
		Data: map[string]string{"replicas": "2"}}, metav1.CreateOptions{})
	e.must(err)
	gatewayCondition(t, gwc, ns, "configmap", "", "Accepted", metav1.ConditionTrue, "Accepted", "")
	gatewayCondition(t, gwc, ns, "invalid", "", "Accepted", metav1.ConditionFalse, "InvalidParameters", "not supported")

	var want []string
	for _, f := range gatewayapi.SupportedFeatures {
		want = append(want, string(f))
	}
	slices.Sort(want)
	poll.Seen(t, "GatewayClass "+className+" status.supportedFeatures", func() (string, bool) {
		gc, err := gwc.GatewayV1().GatewayClasses().Get(ctx, className, metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		var got []string
		for _, f := range gc.Status.SupportedFeatures {
			got = append(got, string(f.Name))
		}
		return strings.Join(got, ","), slices.Equal(got, want)
	}, apiPoll...)
}

// Client certificate validation (Gateway spec.tls.frontend), on a real API
// server: while its CA ConfigMap does not exist the HTTPS listener is
// Accepted False (NoValidCACertificate) and its proxy has no HTTPS
// listener, never one open to clients without a certificate; the
// ConfigMap created, the listener requires a client certificate checked
// against that CA, carried inline; the ConfigMap's CA changed, the
// listener follows.
func TestGatewayAPIFrontendClientCertificateValidation(t *testing.T) {
	e, gwc, className := gatewayAPIEnv(t, "gwfrontend")
	ns := e.ns
	e.tlsSecret(ns, "site")
	host := gw.Hostname("secure.example.com")
	_, err := gwc.GatewayV1().Gateways(ns).Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className),
			TLS: &gw.GatewayTLSConfig{Frontend: &gw.FrontendTLSConfig{Default: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{
				CACertificateRefs: []gw.ObjectReference{{Group: "", Kind: "ConfigMap", Name: "client-ca"}}}}}},
			Listeners: []gw.Listener{
				{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
				{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType, Hostname: &host, TLS: &gw.ListenerTLSConfig{
					CertificateRefs: []gw.SecretObjectReference{{Name: "site"}}}},
			}},
	}, metav1.CreateOptions{})
	e.must(err)
	node := adsc.NodeOptions{IP: "127.0.0.1", PodName: "edge-1", Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: "edge"}}
	proxy := e.gatewayAs(node, "edge-"+className, ns)

	gatewayCondition(t, gwc, ns, "edge", "https", "Accepted", metav1.ConditionFalse, "NoValidCACertificate", "")
	gatewayCondition(t, gwc, ns, "edge", "https", "ResolvedRefs", metav1.ConditionFalse, "InvalidCACertificateRef", "does not exist")
	gatewayCondition(t, gwc, ns, "edge", "http", "Accepted", metav1.ConditionTrue, "Accepted", "")
	s := waitFor(t, proxy, "the HTTP listener", func(s adsc.State) bool { return s.Listeners["0.0.0.0_80"] != nil })
	if s.Listeners["0.0.0.0_443"] != nil {
		t.Errorf("the HTTPS listener is served without its client CA: %s", describe(s))
	}

	// The listener carries the CA's certificates, re-encoded.
	first := string(certs.NewCA(t, "clients-1").Server(t, "unused").CertPEM)
	cm, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "client-ca"},
		Data: map[string]string{"ca.crt": first}}, metav1.CreateOptions{})
	e.must(err)
	gatewayCondition(t, gwc, ns, "edge", "https", "Accepted", metav1.ConditionTrue, "Accepted", "")
	gatewayCondition(t, gwc, ns, "edge", "https", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", "")
	trusted := func(s adsc.State) (string, bool) {
		l := s.Listeners["0.0.0.0_443"]
		if l == nil || len(l.GetFilterChains()) != 1 {
			return "", false
		}
		var tlsCtx tlsv3.DownstreamTlsContext
		if err := l.GetFilterChains()[0].GetTransportSocket().GetTypedConfig().UnmarshalTo(&tlsCtx); err != nil {
			return "", false
		}
		return tlsCtx.GetCommonTlsContext().GetValidationContext().GetTrustedCa().GetInlineString(), tlsCtx.GetRequireClientCertificate().GetValue()
	}
	waitFor(t, proxy, "the HTTPS listener requiring a client certificate of the CA", func(s adsc.State) bool {
		ca, required := trusted(s)
		return required && ca == first
	})

	// Another CA in the ConfigMap: the listener follows.
	second := string(certs.NewCA(t, "clients-2").Server(t, "unused").CertPEM)
	cm.Data = map[string]string{"ca.crt": second}
	_, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	e.must(err)
	waitFor(t, proxy, "the HTTPS listener with the ConfigMap's new CA", func(s adsc.State) bool {
		ca, required := trusted(s)
		return required && ca == second
	})
}
