package gatewayapi_test

import (
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
)

// Client certificate validation (spec.tls.frontend) as istiod 1.29's
// resolveGatewayTLS and buildTLS apply it, plus the mode: the validation
// of a listener's port (perPort, else default) makes its terminating
// server MUTUAL (AllowValidOnly) or OPTIONAL_MUTUAL
// (AllowInsecureFallback), caCertCredentialName named as istiod names it
// and the bundle carried inline by the generated Gateway; a port whose
// perPort entry has no validation stays SIMPLE; HTTP and Passthrough
// listeners are untouched. A ref that does not resolve is reported on the
// listener (InvalidCACertificateRef, InvalidCACertificateKind); with none
// valid the listener is Accepted False, NoValidCACertificate, and not
// served.
func TestFrontendClientCertificateValidation(t *testing.T) {
	ca := certs.NewCA(t, "clients")
	caPEM := string(ca.Server(t, "unused").CertPEM) // any certificate parses as a bundle
	tlsListener := func(name string, port gw.PortNumber) gw.Listener {
		return gw.Listener{Name: gw.SectionName(name), Port: port, Protocol: gw.HTTPSProtocolType,
			TLS: &gw.ListenerTLSConfig{CertificateRefs: []gw.SecretObjectReference{{Name: "cert"}}}}
	}
	cm := func(name string) gw.ObjectReference {
		return gw.ObjectReference{Kind: "ConfigMap", Name: gw.ObjectName(name)}
	}
	g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners: []gw.Listener{
			tlsListener("default", 443), tlsListener("no-validation", 8443), tlsListener("fallback", 9443),
			tlsListener("missing", 10443), tlsListener("wrong-kind", 11443), tlsListener("one-of-two", 12443),
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
			{Name: "pass", Port: 9444, Protocol: gw.TLSProtocolType, TLS: &gw.ListenerTLSConfig{Mode: ptrTo(gw.TLSModePassthrough)}},
		},
		TLS: &gw.GatewayTLSConfig{
			Frontend: &gw.FrontendTLSConfig{
				Default: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{CACertificateRefs: []gw.ObjectReference{cm("ca")}}},
				PerPort: []gw.TLSPortConfig{
					{Port: 8443, TLS: gw.TLSConfig{}},
					{Port: 9443, TLS: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{Mode: gw.AllowInsecureFallback,
						CACertificateRefs: []gw.ObjectReference{{Kind: "Secret", Name: "ca-secret"}}}}},
					{Port: 10443, TLS: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{CACertificateRefs: []gw.ObjectReference{cm("missing")}}}},
					{Port: 11443, TLS: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{
						CACertificateRefs: []gw.ObjectReference{{Group: "example.com", Kind: "Bundle", Name: "ca"}}}}},
					{Port: 12443, TLS: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{CACertificateRefs: []gw.ObjectReference{cm("missing"), cm("ca")}}}},
				},
			},
		},
	}}
	in := everySecretServes(t, gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}})
	serving := in.Secrets
	in.Secrets = func(ns, name string) *corev1.Secret {
		if name == "ca-secret" {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"ca.crt": []byte(caPEM)}}
		}
		return serving(ns, name)
	}
	in.ConfigMaps = func(ns, name string) *corev1.ConfigMap {
		if ns == "edge-ns" && name == "ca" {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"ca.crt": "# comment\n" + caPEM}}
		}
		return nil
	}
	res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, goldenNow)
	byListener := map[string]config.Config{}
	for _, c := range res.Configs {
		byListener[c.Annotations[model.GatewayAPIListenerAnnotation]] = c
	}
	server := func(l string) *networking.Server {
		t.Helper()
		c, ok := byListener[l]
		if !ok {
			t.Fatalf("listener %s is not served", l)
		}
		return c.Spec.(*networking.Gateway).Servers[0]
	}
	check := func(l string, mode networking.ServerTLSSettings_TLSmode, caName string) {
		t.Helper()
		tls := server(l).GetTls()
		if tls.GetMode() != mode || tls.GetCaCertCredentialName() != caName {
			t.Errorf("listener %s: mode %s caCertCredentialName %q, want %s %q", l, tls.GetMode(), tls.GetCaCertCredentialName(), mode, caName)
		}
		if caName == "" {
			return
		}
		bundle := byListener[l].Annotations[model.GatewayClientCAAnnotationPrefix+caName]
		if bundle != caPEM {
			t.Errorf("listener %s carries CA %q, want the certificate alone", l, bundle)
		}
	}
	check("default", networking.ServerTLSSettings_MUTUAL, "configmap://edge-ns/ca-cacert")
	check("no-validation", networking.ServerTLSSettings_SIMPLE, "")
	check("fallback", networking.ServerTLSSettings_OPTIONAL_MUTUAL, "kubernetes-gateway://edge-ns/ca-secret-cacert")
	check("one-of-two", networking.ServerTLSSettings_MUTUAL, "configmap://edge-ns/ca-cacert")
	if server("http").GetTls() != nil || server("pass").GetTls().GetMode() != networking.ServerTLSSettings_PASSTHROUGH {
		t.Error("the HTTP or Passthrough listener is changed")
	}
	for _, l := range []string{"missing", "wrong-kind"} {
		if _, ok := byListener[l]; ok {
			t.Errorf("listener %s without a valid CA is served", l)
		}
	}
	cases := []struct {
		listener          gw.SectionName
		accepted          metav1.ConditionStatus
		acceptedReason    gw.ListenerConditionReason
		resolvedReason    gw.ListenerConditionReason
		resolvedTextMatch string
	}{
		{"missing", metav1.ConditionFalse, gw.ListenerReasonNoValidCACertificate, gw.ListenerReasonInvalidCACertificateRef, "ConfigMap edge-ns/missing does not exist"},
		{"wrong-kind", metav1.ConditionFalse, gw.ListenerReasonNoValidCACertificate, gw.ListenerReasonInvalidCACertificateKind, "kind Bundle"},
		{"one-of-two", metav1.ConditionTrue, gw.ListenerReasonAccepted, gw.ListenerReasonInvalidCACertificateRef, "does not exist"},
		{"default", metav1.ConditionTrue, gw.ListenerReasonAccepted, gw.ListenerReasonResolvedRefs, ""},
	}
	for _, c := range cases {
		acc := listenerCondition(t, res, "edge-ns", "edge", c.listener, gw.ListenerConditionAccepted)
		res := listenerCondition(t, res, "edge-ns", "edge", c.listener, gw.ListenerConditionResolvedRefs)
		if acc.Status != c.accepted || acc.Reason != string(c.acceptedReason) {
			t.Errorf("listener %s: Accepted %s %s, want %s %s", c.listener, acc.Status, acc.Reason, c.accepted, c.acceptedReason)
		}
		if res.Reason != string(c.resolvedReason) || !strings.Contains(res.Message, c.resolvedTextMatch) {
			t.Errorf("listener %s: ResolvedRefs %s %s %q, want %s %q", c.listener, res.Status, res.Reason, res.Message, c.resolvedReason, c.resolvedTextMatch)
		}
	}
	if !res.Referenced.ConfigMap("edge-ns", "ca") || !res.Referenced.Secret("edge-ns", "ca-secret") {
		t.Error("the CA ConfigMap and Secret are not recorded as referenced")
	}
}

// The parent Gateway's client certificate validation applies to the
// terminating listeners a ListenerSet adds on its ports: served MUTUAL
// with the parent's CA, or, the CA missing, refused on the set's status,
// never served to clients without a certificate.
func TestFrontendValidationAppliesToListenerSets(t *testing.T) {
	caPEM := string(certs.NewCA(t, "clients").Server(t, "unused").CertPEM)
	parent := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		AllowedListeners: &gw.AllowedListeners{Namespaces: &gw.ListenerNamespaces{From: ptrTo(gw.NamespacesFromSame)}},
		Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
		TLS: &gw.GatewayTLSConfig{Frontend: &gw.FrontendTLSConfig{
			Default: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{CACertificateRefs: []gw.ObjectReference{{Kind: "ConfigMap", Name: "ca"}}}},
			PerPort: []gw.TLSPortConfig{{Port: 9443, TLS: gw.TLSConfig{Validation: &gw.FrontendTLSValidation{
				CACertificateRefs: []gw.ObjectReference{{Kind: "ConfigMap", Name: "missing"}}}}}},
		}},
	}}
	entry := func(name string, port gw.PortNumber) gw.ListenerEntry {
		return gw.ListenerEntry{Name: gw.SectionName(name), Port: port, Protocol: gw.HTTPSProtocolType,
			TLS: &gw.ListenerTLSConfig{CertificateRefs: []gw.SecretObjectReference{{Name: "cert"}}}}
	}
	set := &gw.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "extra"}, Spec: gw.ListenerSetSpec{
		ParentRef: gw.ParentGatewayReference{Name: "edge"},
		Listeners: []gw.ListenerEntry{entry("set-https", 443), entry("set-invalid", 9443)},
	}}
	in := everySecretServes(t, gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{parent},
		ListenerSets: []*gw.ListenerSet{set}})
	in.ConfigMaps = func(ns, name string) *corev1.ConfigMap {
		if ns == "edge-ns" && name == "ca" {
			return &corev1.ConfigMap{Data: map[string]string{"ca.crt": caPEM}}
		}
		return nil
	}
	res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, goldenNow)
	served := map[string]*networking.Server{}
	for _, c := range res.Configs {
		if g, ok := c.Spec.(*networking.Gateway); ok {
			served[c.Annotations[model.GatewayAPIListenerAnnotation]] = g.Servers[0]
		}
	}
	if s := served["set-https"]; s == nil || s.GetTls().GetMode() != networking.ServerTLSSettings_MUTUAL ||
		s.GetTls().GetCaCertCredentialName() != "configmap://edge-ns/ca-cacert" {
		t.Errorf("the set's HTTPS listener: %v, want MUTUAL with the parent's CA", s)
	}
	if s := served["set-invalid"]; s != nil {
		t.Errorf("the set's listener without a valid CA is served: %v", s)
	}
	st, ok := res.Status.ListenerSets[nn("edge-ns", "extra")]
	if !ok {
		t.Fatal("no ListenerSet status")
	}
	found := false
	for _, l := range st.Listeners {
		if l.Name != "set-invalid" {
			continue
		}
		for _, c := range l.Conditions {
			if c.Type == string(gw.ListenerConditionAccepted) {
				found = true
				if c.Reason != string(gw.ListenerReasonNoValidCACertificate) {
					t.Errorf("set-invalid Accepted %s %s, want NoValidCACertificate", c.Status, c.Reason)
				}
			}
		}
	}
	if !found {
		t.Errorf("no Accepted condition for set-invalid in %+v", st.Listeners)
	}
}
