package gatewayapi_test

import (
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/cluster"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/core"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Two Gateways of one namespace route to a Service a BackendTLSPolicy
// covers; only "edge" names a backend client certificate.
const backendClientInput = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: wayfinder}
spec: {controllerName: wayfinder.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: gw}
spec:
  gatewayClassName: wayfinder
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  tls:
    backend:
      clientCertificateRef: {name: client}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: gw}
spec:
  gatewayClassName: wayfinder
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: apps}
spec:
  parentRefs: [{name: edge, namespace: gw}, {name: other, namespace: gw}]
  rules:
  - backendRefs: [{name: secure, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /plain}}]
    backendRefs: [{name: plain, port: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: secure, namespace: apps}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: plain, namespace: apps}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: secure, namespace: apps}
spec:
  targetRefs: [{group: "", kind: Service, name: secure}]
  validation: {wellKnownCACertificates: System, hostname: secure.example.com}
`

// presented is the SDS name of the client certificate cluster c
// presents, "" for none.
func presented(t *testing.T, c *clusterv3.Cluster) string {
	t.Helper()
	if c.GetTransportSocket() == nil {
		return ""
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ctx.ValidateAll(); err != nil {
		t.Errorf("cluster %s TLS context fails validation: %v", c.GetName(), err)
	}
	var names []string
	for _, s := range ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
		names = append(names, s.GetName())
	}
	return strings.Join(names, ",")
}

func clusterByName(t *testing.T, push *model.PushContext, name string) *clusterv3.Cluster {
	t.Helper()
	clusters, errs := cluster.BuildClusters(push)
	if len(errs) > 0 {
		t.Errorf("cluster errors: %v", errs)
	}
	for _, c := range clusters {
		if err := c.ValidateAll(); err != nil {
			t.Errorf("cluster %s fails validation: %v", c.GetName(), err)
		}
		if c.GetName() == name {
			return c
		}
	}
	t.Fatalf("no cluster %s", name)
	return nil
}

// GEP-3155: the proxies of the Gateway that names a backend client
// certificate present it on the connections a BackendTLSPolicy
// originates, and only there; another Gateway's proxies of the same
// namespace, and a proxy of another namespace carrying the Gateway's
// label, do not; the Secret is sent to the Gateway's own proxies alone.
func TestBackendClientCertificatePresentedByItsGatewayOnly(t *testing.T) {
	in := decode(t, []byte(backendClientInput))
	client := servingSecret(t, "gw", "client")
	in.kube.Secrets = func(ns, name string) *corev1.Secret {
		if ns == "gw" && name == "client" {
			return client
		}
		return nil
	}
	res := gatewayapi.ConvertWithStatus(in.kube, gatewayapi.Options{}, goldenNow)
	st := res.Status.Gateways[types.NamespacedName{Namespace: "gw", Name: "edge"}]
	if c := meta.FindStatusCondition(st.Conditions, string(gw.GatewayConditionResolvedRefs)); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("edge ResolvedRefs = %v, want True", c)
	}
	const want = "kubernetes-gateway://gw/client"
	var annotated []string
	for _, c := range res.Configs {
		if c.Kind == schema.Gateway && c.Annotations[model.BackendClientCertificateAnnotation] != "" {
			annotated = append(annotated, c.Name+"="+c.Annotations[model.BackendClientCertificateAnnotation])
		}
	}
	if len(annotated) != 1 || !strings.HasSuffix(annotated[0], "="+want) {
		t.Fatalf("generated Gateways naming the certificate: %v, want edge's one listener naming %s", annotated, want)
	}

	push := model.NewPushContext(memory.New(res.Configs), in)
	proxy := func(ns, gateway string) *model.Proxy {
		return &model.Proxy{Namespace: ns, Labels: map[string]string{gatewayapi.GatewayNameLabel: gateway},
			Identity: &model.Identity{Namespace: ns, ServiceAccount: gateway}}
	}
	edge, other, stranger := proxy("gw", "edge"), proxy("gw", "other"), proxy("elsewhere", "edge")
	secure := model.ClusterName(443, "", "secure.apps.svc.cluster.local")
	plain := model.ClusterName(8080, "", "plain.apps.svc.cluster.local")

	view := push.ForProxy(edge)
	if got := view.BackendClientCertificate(); got != want {
		t.Fatalf("edge's view presents %q, want %s", got, want)
	}
	if got := presented(t, clusterByName(t, view, secure)); got != want {
		t.Errorf("edge's %s presents %q, want %s", secure, got, want)
	}
	if c := clusterByName(t, view, plain); c.GetTransportSocket() != nil {
		t.Errorf("edge's %s originates TLS no policy asked for", plain)
	}
	for name, p := range map[string]*model.Proxy{"other": other, "stranger": stranger} {
		v := push.ForProxy(p)
		if v.View() == view.View() || v.BackendClientCertificate() != "" {
			t.Errorf("%s shares edge's view %q or presents %q", name, v.View(), v.BackendClientCertificate())
		}
		if got := presented(t, clusterByName(t, v, secure)); got != "" {
			t.Errorf("%s's %s presents %q; only edge's proxies present it", name, secure, got)
		}
	}

	// The Secret reaches edge's proxies, as the generated Gateway's own.
	store := model.SecretStoreFunc(func(ns, name string) ([]byte, []byte, bool) {
		if ns == "gw" && name == "client" {
			return client.Data[corev1.TLSCertKey], client.Data[corev1.TLSPrivateKeyKey], true
		}
		return nil, nil, false
	})
	scope := model.SecretScope{Identity: edge.Identity, Grants: res.SecretGrants}
	out := core.BuildGatewayWithSecrets(view, push.GatewaysForProxy(edge), store, scope)
	if !slices.ContainsFunc(out.UpstreamSecrets, func(s *tlsv3.Secret) bool { return s.GetName() == want }) {
		t.Errorf("edge's proxies are not sent %s: %v (refusals %v, errors %v)", want, out.UpstreamSecrets, out.SecretRefusals, out.Errors)
	}
	otherOut := core.BuildGatewayWithSecrets(push.ForProxy(other), push.GatewaysForProxy(other), store,
		model.SecretScope{Identity: other.Identity, Grants: res.SecretGrants})
	if len(otherOut.UpstreamSecrets) != 0 {
		t.Errorf("other's proxies are sent %v", otherOut.UpstreamSecrets)
	}
	// Unauthenticated proxies of edge get a refusal, never the key.
	plainOut := core.BuildGatewayWithSecrets(view, push.GatewaysForProxy(edge), store, model.SecretScope{Grants: res.SecretGrants})
	if len(plainOut.UpstreamSecrets) != 0 || len(plainOut.SecretRefusals) != 1 {
		t.Errorf("unauthenticated: secrets %v, refusals %v; want none and one refusal", plainOut.UpstreamSecrets, plainOut.SecretRefusals)
	}
}

// A clientCertificateRef that cannot be used leaves the Gateway Accepted
// with ResolvedRefs False and the reason the specification names
// (GatewayInvalidTLSBackendConfiguration), as istiod 1.29 reports it; no
// generated Gateway names it, so no connection presents it.
func TestBackendClientCertificateInvalid(t *testing.T) {
	malformed := servingSecret(t, "gw", "malformed")
	malformed.Data[corev1.TLSPrivateKeyKey] = []byte("not a key")
	secrets := map[string]*corev1.Secret{
		"gw/malformed": malformed,
		"certs/lent":   servingSecret(t, "certs", "lent"),
		"certs/kept":   servingSecret(t, "certs", "kept"),
	}
	grant := &gw.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "lend"}, Spec: gw.ReferenceGrantSpec{
		From: []gw.ReferenceGrantFrom{{Group: gw.GroupName, Kind: "Gateway", Namespace: "gw"}},
		To:   []gw.ReferenceGrantTo{{Group: "", Kind: "Secret", Name: ptrTo(gw.ObjectName("lent"))}},
	}}
	cases := []struct {
		name   string
		ref    gw.SecretObjectReference
		reason gw.GatewayConditionReason // "" when resolved
	}{
		{"missing", gw.SecretObjectReference{Name: "nonexistent"}, gw.GatewayReasonInvalidClientCertificateRef},
		{"group", gw.SecretObjectReference{Group: ptrTo(gw.Group("wrong.example.com")), Name: "malformed"}, gw.GatewayReasonInvalidClientCertificateRef},
		{"kind", gw.SecretObjectReference{Kind: ptrTo(gw.Kind("WrongKind")), Name: "malformed"}, gw.GatewayReasonInvalidClientCertificateRef},
		{"malformed", gw.SecretObjectReference{Name: "malformed"}, gw.GatewayReasonInvalidClientCertificateRef},
		{"no-grant", gw.SecretObjectReference{Namespace: ptrTo(gw.Namespace("certs")), Name: "kept"}, gw.GatewayReasonRefNotPermitted},
		{"granted", gw.SecretObjectReference{Namespace: ptrTo(gw.Namespace("certs")), Name: "lent"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "edge", Generation: 2}, Spec: gw.GatewaySpec{
				GatewayClassName: "wayfinder",
				Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
				TLS:              &gw.GatewayTLSConfig{Backend: &gw.GatewayBackendTLS{ClientCertificateRef: &c.ref}},
			}}
			in := gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g},
				ReferenceGrants: []*gw.ReferenceGrant{grant},
				Secrets:         func(ns, name string) *corev1.Secret { return secrets[ns+"/"+name] }}
			res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, goldenNow)
			st := res.Status.Gateways[types.NamespacedName{Namespace: "gw", Name: "edge"}]
			resolved, accepted := meta.FindStatusCondition(st.Conditions, string(gw.GatewayConditionResolvedRefs)), meta.FindStatusCondition(st.Conditions, string(gw.GatewayConditionAccepted))
			if accepted == nil || accepted.Status != metav1.ConditionTrue {
				t.Errorf("Accepted = %v, want True", accepted)
			}
			if resolved == nil || resolved.ObservedGeneration != 2 {
				t.Fatalf("ResolvedRefs = %v, want one at generation 2", resolved)
			}
			var named string
			for _, cfg := range res.Configs {
				named += cfg.Annotations[model.BackendClientCertificateAnnotation]
			}
			if c.reason == "" {
				if resolved.Status != metav1.ConditionTrue || named != "kubernetes-gateway://certs/lent" {
					t.Errorf("ResolvedRefs %s %s, certificate %q; want True and the lent Secret", resolved.Status, resolved.Reason, named)
				}
				if !res.SecretGrants.GatewayMayUse(config.Key{Kind: schema.Gateway, Namespace: "gw", Name: gatewayapi.IstioGatewayName("edge", "http")},
					model.SecretRef{Namespace: "certs", Name: "lent"}) {
					t.Error("the granted Secret is not lent to edge's generated Gateway")
				}
				return
			}
			if resolved.Status != metav1.ConditionFalse || resolved.Reason != string(c.reason) || named != "" {
				t.Errorf("ResolvedRefs %s %s %q, certificate %q; want False %s and none", resolved.Status, resolved.Reason, resolved.Message, named, c.reason)
			}
			if strings.Contains(resolved.Message, "not a key") {
				t.Errorf("the message quotes the Secret: %s", resolved.Message)
			}
			if !slices.ContainsFunc(res.Errors, func(e *config.Error) bool {
				return e.Field == "spec.tls.backend.clientCertificateRef" && !e.Warning
			}) {
				t.Errorf("no error at spec.tls.backend.clientCertificateRef: %v", res.Errors)
			}
		})
	}
}

// File mode reads no Secrets: the reference is warned about and no
// generated Gateway names it, so no cluster waits for a Secret that can
// never be sent.
func TestBackendClientCertificateFileModeWarns(t *testing.T) {
	in := decode(t, []byte(backendClientInput))
	in.kube.Secrets = nil
	res := gatewayapi.ConvertWithStatus(in.kube, gatewayapi.Options{}, goldenNow)
	for _, c := range res.Configs {
		if c.Annotations[model.BackendClientCertificateAnnotation] != "" {
			t.Errorf("%s names a client certificate file mode cannot send", c.Key())
		}
	}
	if !slices.ContainsFunc(res.Errors, func(e *config.Error) bool {
		return e.Field == "spec.tls.backend.clientCertificateRef" && e.Warning && strings.Contains(e.Message, "file mode")
	}) {
		t.Errorf("no warning at spec.tls.backend.clientCertificateRef: %v", res.Errors)
	}
}
