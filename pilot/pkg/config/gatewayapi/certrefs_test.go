package gatewayapi_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
)

// servingSecret is a kubernetes.io/tls Secret holding a fresh serving
// certificate and its key.
func servingSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	leaf := certs.NewCA(t, "test-ca").Server(t, "example.com")
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM, corev1.TLSPrivateKeyKey: leaf.KeyPEM}}
}

// everySecretServes answers every Secret lookup of in with a usable
// certificate, for tests about something else than the Secret's content.
func everySecretServes(t *testing.T, in gatewayapi.Input) gatewayapi.Input {
	t.Helper()
	good := servingSecret(t, "", "")
	in.Secrets = func(ns, name string) *corev1.Secret {
		s := good.DeepCopy()
		s.Namespace, s.Name = ns, name
		return s
	}
	return in
}

func httpsGateway(ns, name, secret string) *gw.Gateway {
	return &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners: []gw.Listener{{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType,
			TLS: &gw.ListenerTLSConfig{CertificateRefs: []gw.SecretObjectReference{{Name: gw.ObjectName(secret)}}}}},
	}}
}

// listenerCondition returns condition typ of listener name of Gateway
// ns/gname in a conversion's status.
func listenerCondition(t *testing.T, res gatewayapi.Result, ns, gname string, listener gw.SectionName, typ gw.ListenerConditionType) metav1.Condition {
	t.Helper()
	for nn, st := range res.Status.Gateways {
		if nn.Namespace != ns || nn.Name != gname {
			continue
		}
		for _, l := range st.Listeners {
			if l.Name != listener {
				continue
			}
			for _, c := range l.Conditions {
				if c.Type == string(typ) {
					return c
				}
			}
		}
	}
	t.Fatalf("Gateway %s/%s listener %s has no %s condition", ns, gname, listener, typ)
	return metav1.Condition{}
}

// A listener's certificateRef is resolved against the Secret itself, as
// istiod 1.29's buildSecretReference does: a Secret that does not exist,
// is of another type, misses the key, holds no PEM, or whose key is not
// the certificate's, gives ResolvedRefs False with InvalidCertificateRef
// and Programmed False, the listener stays Accepted and is not served;
// a usable one is served. No message quotes the Secret's data.
func TestCertificateRefsResolvedAgainstTheSecret(t *testing.T) {
	good := servingSecret(t, "edge-ns", "cert")
	other := servingSecret(t, "edge-ns", "other")
	mismatched := good.DeepCopy()
	mismatched.Data[corev1.TLSPrivateKeyKey] = other.Data[corev1.TLSPrivateKeyKey]
	noKey := good.DeepCopy()
	delete(noKey.Data, corev1.TLSPrivateKeyKey)
	// The conformance suite's malformed Secret: "Hello world" as both.
	hello := good.DeepCopy()
	hello.Data = map[string][]byte{corev1.TLSCertKey: []byte("Hello world\n"), corev1.TLSPrivateKeyKey: []byte("Hello world\n")}
	badKey := good.DeepCopy()
	badKey.Data[corev1.TLSPrivateKeyKey] = []byte("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n")
	wrongType := good.DeepCopy()
	wrongType.Type = corev1.SecretTypeDockerConfigJson
	opaque := good.DeepCopy()
	opaque.Type = corev1.SecretTypeOpaque
	cases := []struct {
		name   string
		secret *corev1.Secret // nil: does not exist
		ok     bool
		msg    string
	}{
		{"usable", good, true, ""},
		{"opaque", opaque, true, ""},
		{"missing", nil, false, "does not exist"},
		{"no key", noKey, false, "holds no certificate and key"},
		{"not PEM", hello, false, "holds no PEM certificate"},
		{"key of another certificate", mismatched, false, "not a usable private key"},
		{"key that does not parse", badKey, false, "not a usable private key"},
		{"wrong type", wrongType, false, "of type kubernetes.io/dockerconfigjson"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{httpsGateway("edge-ns", "edge", "cert")}}
			in.Secrets = func(ns, name string) *corev1.Secret {
				if c.secret == nil || ns != "edge-ns" || name != "cert" {
					return nil
				}
				return c.secret
			}
			res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, goldenNow)
			resolved := listenerCondition(t, res, "edge-ns", "edge", "https", gw.ListenerConditionResolvedRefs)
			programmed := listenerCondition(t, res, "edge-ns", "edge", "https", gw.ListenerConditionProgrammed)
			accepted := listenerCondition(t, res, "edge-ns", "edge", "https", gw.ListenerConditionAccepted)
			if accepted.Status != metav1.ConditionTrue {
				t.Errorf("Accepted %s %s, want True", accepted.Status, accepted.Reason)
			}
			if !res.Referenced.Secret("edge-ns", "cert") {
				t.Error("the Secret is not recorded as referenced")
			}
			if c.ok {
				if resolved.Status != metav1.ConditionTrue || programmed.Status != metav1.ConditionTrue || len(res.Configs) != 1 {
					t.Fatalf("usable Secret: ResolvedRefs %s, Programmed %s, %d configs", resolved.Status, programmed.Status, len(res.Configs))
				}
				return
			}
			if resolved.Status != metav1.ConditionFalse || resolved.Reason != string(gw.ListenerReasonInvalidCertificateRef) ||
				!strings.Contains(resolved.Message, c.msg) {
				t.Errorf("ResolvedRefs %s %s %q, want False InvalidCertificateRef containing %q", resolved.Status, resolved.Reason, resolved.Message, c.msg)
			}
			if programmed.Status != metav1.ConditionFalse {
				t.Errorf("Programmed %s, want False", programmed.Status)
			}
			if len(res.Configs) != 0 {
				t.Errorf("the listener is served: %v", res.Configs)
			}
			if len(res.Errors) == 0 {
				t.Error("no error reported")
			}
			var data map[string][]byte
			if c.secret != nil {
				data = c.secret.Data
			}
			for _, e := range res.Errors {
				for _, v := range data {
					if len(v) > 8 && strings.Contains(e.Error(), strings.TrimSpace(string(v))) {
						t.Errorf("error quotes the Secret's data: %v", e)
					}
				}
			}
			for _, v := range data {
				if len(v) > 8 && strings.Contains(resolved.Message, strings.TrimSpace(string(v))) {
					t.Errorf("status quotes the Secret's data: %q", resolved.Message)
				}
			}
		})
	}
}

// Without a Secrets lookup (file mode) certificateRefs are not checked.
func TestCertificateRefsUncheckedWithoutSecrets(t *testing.T) {
	in := gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{httpsGateway("edge-ns", "edge", "cert")}}
	res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, goldenNow)
	if c := listenerCondition(t, res, "edge-ns", "edge", "https", gw.ListenerConditionResolvedRefs); c.Status != metav1.ConditionTrue {
		t.Errorf("ResolvedRefs %s %s, want True", c.Status, c.Reason)
	}
	if len(res.Configs) != 1 {
		t.Errorf("%d configs, want the listener's", len(res.Configs))
	}
}

// A route attached to a listener whose certificate does not resolve is
// counted in its attachedRoutes and reported Accepted (conformance
// GatewayWithAttachedRoutes), though nothing of it is served there.
func TestRoutesAttachToUnresolvedListener(t *testing.T) {
	g := httpsGateway("edge-ns", "edge", "does-not-exist")
	r := routeTo("web", "web")
	r.Spec.ParentRefs[0].SectionName = ptrTo(gw.SectionName("https"))
	in := gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}, HTTPRoutes: []*gw.HTTPRoute{r},
		Secrets: func(string, string) *corev1.Secret { return nil }}
	res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, goldenNow)
	if len(res.Configs) != 0 {
		t.Errorf("something is served: %v", res.Configs)
	}
	st := res.Status.Gateways[nn("edge-ns", "edge")]
	if len(st.Listeners) != 1 || st.Listeners[0].AttachedRoutes != 1 {
		t.Fatalf("listeners %+v, want one with attachedRoutes 1", st.Listeners)
	}
	parents := res.Status.Routes[gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "edge-ns", Name: "web"}]
	if len(parents) != 1 {
		t.Fatalf("route parents %+v", parents)
	}
	for _, c := range parents[0].Conditions {
		if c.Type == string(gw.RouteConditionAccepted) && c.Status != metav1.ConditionTrue {
			t.Errorf("route Accepted %s %s", c.Status, c.Reason)
		}
		if c.Type == string(gw.RouteConditionResolvedRefs) && c.Status != metav1.ConditionFalse {
			t.Errorf("route ResolvedRefs %s, want False (its Service does not exist)", c.Status)
		}
	}
}

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
