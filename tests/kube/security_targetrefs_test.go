package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// Against a real API server: an AuthorizationPolicy and a
// RequestAuthentication whose targetRefs name a Gateway API Gateway reach
// the proxy deployed for it (and not a proxy of another Gateway), an
// AuthorizationPolicy targeting one HTTPRoute puts per-route config on
// that route's Envoy routes only, and every one of them gets the
// Reconciled status of an object a connected gateway has ACKed.
func TestSecurityTargetRefsAgainstAPIServer(t *testing.T) {
	c, ns := newCluster(t, "sectarget")
	e := clientEnv(t, c, ns)
	className := ns + "-wayfinder"
	gwc := gatewayAPIClass(t, c, className)
	ctx := context.Background()
	_, err := e.kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{})
	e.must(err)
	for _, name := range []string{"edge", "other"} {
		_, err = gwc.GatewayV1().Gateways(ns).Create(ctx, &gw.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(className), Listeners: []gw.Listener{{
				Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
			}}},
		}, metav1.CreateOptions{})
		e.must(err)
	}
	port := gw.PortNumber(8080)
	for _, r := range []struct{ name, host, parent string }{{"shop", "shop.example.com", "edge"}, {"blog", "blog.example.com", "edge"}} {
		_, err = gwc.GatewayV1().HTTPRoutes(ns).Create(ctx, &gw.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.name},
			Spec: gw.HTTPRouteSpec{
				CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: gw.ObjectName(r.parent)}}},
				Hostnames:       []gw.Hostname{gw.Hostname(r.host)},
				Rules: []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{
					BackendObjectReference: gw.BackendObjectReference{Name: "web", Port: &port}}}}}},
			},
		}, metav1.CreateOptions{})
		e.must(err)
	}
	ref := func(kind, name string) []*typev1beta1.PolicyTargetReference {
		return []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: kind, Name: name}}
	}
	aps := e.istio.SecurityV1().AuthorizationPolicies(ns)
	_, err = aps.Create(ctx, &securityv1.AuthorizationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-deny-office"},
		Spec: securityapi.AuthorizationPolicy{TargetRefs: ref("Gateway", "edge"), Action: securityapi.AuthorizationPolicy_DENY,
			Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{Source: &securityapi.Source{RemoteIpBlocks: []string{"203.0.113.0/24"}}}}}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = aps.Create(ctx, &securityv1.AuthorizationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-get-only"},
		Spec: securityapi.AuthorizationPolicy{TargetRefs: ref("HTTPRoute", "shop"), Action: securityapi.AuthorizationPolicy_ALLOW,
			Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Methods: []string{"GET"}}}}}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = e.istio.SecurityV1().RequestAuthentications(ns).Create(ctx, &securityv1.RequestAuthentication{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-jwt"},
		Spec: securityapi.RequestAuthentication{TargetRefs: ref("Gateway", "edge"),
			JwtRules: []*securityapi.JWTRule{{Issuer: "https://issuer.example", Jwks: testJWKS}}},
	}, metav1.CreateOptions{})
	e.must(err)

	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})
	addr := e.server.GRPCAddr().String()
	edge := gatewayProxy(t, addr, ns, "edge-1", "edge")
	s := waitFor(t, edge, "the Gateway's and the route's policies", func(s adsc.State) bool {
		names := hcmFilterNames(s)
		return slices.Contains(names, "envoy.filters.http.jwt_authn") && slices.Contains(names, "envoy.filters.http.rbac") &&
			slices.Contains(names, "wayfinder.filters.http.rbac.route.allow")
	})
	for _, vh := range s.Routes["http.80"].GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			_, has := r.GetTypedPerFilterConfig()["wayfinder.filters.http.rbac.route.allow"]
			switch vh.GetName() {
			case "shop.example.com:80":
				if !has {
					t.Errorf("route %s of the targeted HTTPRoute has no per-route RBAC", r.GetStatPrefix())
				}
			case "blog.example.com:80":
				if has {
					t.Errorf("route %s of another HTTPRoute got the shop policy", r.GetStatPrefix())
				}
			}
		}
	}

	// A proxy of the other Gateway gets none of edge's policies.
	other := gatewayProxy(t, addr, ns, "other-1", "other")
	s = waitFor(t, other, "the other Gateway's listener", func(s adsc.State) bool {
		_, ok := s.Listeners["0.0.0.0_80"]
		return ok && s.Types[adsc.ListenerType].ACKs > 0
	})
	if names := hcmFilterNames(s); slices.Contains(names, "envoy.filters.http.jwt_authn") || slices.Contains(names, "envoy.filters.http.rbac") {
		t.Errorf("the other Gateway's proxy got edge's policies: %v", names)
	}

	for _, name := range []string{"edge-deny-office", "shop-get-only"} {
		poll.Seen(t, "AuthorizationPolicy "+name+" Reconciled by the ACKing gateway", func() (string, bool) {
			ap, err := aps.Get(ctx, name, metav1.GetOptions{})
			e.must(err)
			return conditionOf(ap.Status.GetConditions(), status.ConditionReconciled), strings.HasPrefix(conditionOf(ap.Status.GetConditions(), status.ConditionReconciled), "True/Reconciled")
		}, apiPoll...)
	}
	poll.Seen(t, "RequestAuthentication edge-jwt Reconciled", func() (string, bool) {
		ra, err := e.istio.SecurityV1().RequestAuthentications(ns).Get(ctx, "edge-jwt", metav1.GetOptions{})
		e.must(err)
		v := conditionOf(ra.Status.GetConditions(), status.ConditionReconciled)
		return v, strings.HasPrefix(v, "True/Reconciled")
	}, apiPoll...)
}

// testJWKS is a public RSA key set, inline so that no key server is
// needed.
const testJWKS = `{"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","e":"AQAB","n":"xAE7eB6qugXyCAG3yhh7pkDkT65pHymX-P7KfIupjf59vsdo91bSP9C8H07pSAGQO1MV_xFj9VswgsCg4R6otmg5PV2He95lZdHtOcU5DXIg_pbhLdKXbi66GlVeK6ABZOUW3WYtnNHD-91gVuoeJT_DwtGGcp4ignkgXfkiEm4sw-4sfb4qdt5oLbyVpmW6x9cfa7vs2WTfURiCrBoUqgBo_-4WTiULmmHSGZHOjzwa8WtrtOQGsAFjIbno85jp6MnGGGZPYZbDAa_b3y5u-YpW7ypZrvD8BgtKVjgtQgZhLAGezMt0ua3DRrWnKqTZ0BJ_EyxOGuHJrLsn00fnMQ"}]}`

// hcmFilterNames are the HTTP filters of listener 0.0.0.0_80.
func hcmFilterNames(s adsc.State) []string {
	var out []string
	for _, fc := range s.Listeners["0.0.0.0_80"].GetFilterChains() {
		for _, f := range fc.GetFilters() {
			cm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(cm) != nil {
				continue
			}
			for _, h := range cm.GetHttpFilters() {
				out = append(out, h.GetName())
			}
		}
	}
	return out
}

// conditionOf renders condition typ of conds as "Status/Reason: Message".
func conditionOf[C interface {
	GetType() string
	GetStatus() string
	GetReason() string
	GetMessage() string
}](conds []C, typ string) string {
	for _, c := range conds {
		if c.GetType() == typ {
			return fmt.Sprintf("%s/%s: %s", c.GetStatus(), c.GetReason(), c.GetMessage())
		}
	}
	return ""
}
