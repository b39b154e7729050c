package gatewayapi_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

func ptrTo[T any](v T) *T { return &v }

// statusInput: class "ours" (Wayfinder) and "theirs"; Gateway edge/gw of
// ours with an HTTP listener and two on port 9000 that conflict; Gateway
// edge/other of theirs; HTTPRoutes in app with various backends.
func statusInput(grant bool) gatewayapi.Input {
	om := func(ns, name string, gen int64) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: gen}
	}
	route := func(name string, parents []gw.ParentReference, ref gw.BackendObjectReference) *gw.HTTPRoute {
		return &gw.HTTPRoute{ObjectMeta: om("app", name, 4), Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gw.HTTPRouteRule{{BackendRefs: []gw.HTTPBackendRef{{BackendRef: gw.BackendRef{BackendObjectReference: ref}}}}},
		}}
	}
	edge := []gw.ParentReference{{Name: "gw", Namespace: ptrTo(gw.Namespace("edge"))}}
	svc := func(ns, name string) gw.BackendObjectReference {
		return gw.BackendObjectReference{Name: gw.ObjectName(name), Namespace: (*gw.Namespace)(ptrTo(ns)), Port: ptrTo(gw.PortNumber(80))}
	}
	all := &gw.AllowedRoutes{Namespaces: &gw.RouteNamespaces{From: ptrTo(gw.NamespacesFromAll)}}
	in := gatewayapi.Input{
		GatewayClasses: []*gw.GatewayClass{
			{ObjectMeta: om("", "ours", 2), Spec: gw.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}},
			{ObjectMeta: om("", "theirs", 1), Spec: gw.GatewayClassSpec{ControllerName: "example.com/other"}},
		},
		Gateways: []*gw.Gateway{
			{ObjectMeta: om("edge", "gw", 3), Spec: gw.GatewaySpec{GatewayClassName: "ours", Listeners: []gw.Listener{
				{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, AllowedRoutes: all},
				{Name: "tcp", Port: 9000, Protocol: gw.TCPProtocolType},
				{Name: "plain", Port: 9000, Protocol: gw.HTTPProtocolType,
					AllowedRoutes: &gw.AllowedRoutes{Kinds: []gw.RouteGroupKind{{Kind: "TCPRoute"}}}},
			}}},
			{ObjectMeta: om("edge", "other", 1), Spec: gw.GatewaySpec{GatewayClassName: "theirs", Listeners: []gw.Listener{
				{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType},
			}}},
		},
		HTTPRoutes: []*gw.HTTPRoute{
			route("good", append(edge, gw.ParentReference{Name: "other", Namespace: ptrTo(gw.Namespace("edge"))}), svc("app", "web")),
			route("missing", edge, svc("app", "nope")),
			route("kind", edge, gw.BackendObjectReference{Group: ptrTo(gw.Group("example.com")), Kind: ptrTo(gw.Kind("Bucket")), Name: "b"}),
			route("foreign", edge, svc("shared", "db")),
			route("nosection", []gw.ParentReference{{Name: "gw", Namespace: ptrTo(gw.Namespace("edge")), SectionName: ptrTo(gw.SectionName("none"))}}, svc("app", "web")),
		},
		Services: func(ns, name string) *corev1.Service {
			if (ns == "app" && name == "web") || (ns == "shared" && name == "db") {
				return &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
			}
			if ns == "edge" && name == "gw-ours" { // the Gateway's deployed Service
				return &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7", Ports: []corev1.ServicePort{{Port: 80}}}}
			}
			return nil
		},
	}
	if grant {
		in.ReferenceGrants = []*gw.ReferenceGrant{{ObjectMeta: om("shared", "allow-app", 1), Spec: gw.ReferenceGrantSpec{
			From: []gw.ReferenceGrantFrom{{Group: gw.GroupName, Kind: "HTTPRoute", Namespace: "app"}},
			To:   []gw.ReferenceGrantTo{{Kind: "Service"}},
		}}}
	}
	return in
}

func wantCond(t *testing.T, what string, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string, gen int64) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		t.Errorf("%s: no %s condition in %+v", what, typ, conds)
		return
	}
	if c.Status != status || c.Reason != reason || c.ObservedGeneration != gen {
		t.Errorf("%s: %s is %s/%s (generation %d), want %s/%s (generation %d): %s", what, typ, c.Status, c.Reason, c.ObservedGeneration, status, reason, gen, c.Message)
	}
}

func TestStatusComputed(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	st := gatewayapi.ConvertWithStatus(statusInput(false), gatewayapi.Options{}, now).Status

	if len(st.GatewayClasses) != 1 {
		t.Fatalf("status for classes %v, want only ours", st.GatewayClasses)
	}
	wantCond(t, "GatewayClass ours", st.GatewayClasses["ours"].Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 2)
	if got := st.GatewayClasses["ours"].Conditions[0].LastTransitionTime.Time; !got.Equal(now) {
		t.Errorf("lastTransitionTime %v, want %v", got, now)
	}

	if _, ok := st.Gateways[types.NamespacedName{Namespace: "edge", Name: "other"}]; ok {
		t.Errorf("status computed for a Gateway of another controller")
	}
	g := st.Gateways[types.NamespacedName{Namespace: "edge", Name: "gw"}]
	wantCond(t, "Gateway", g.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 3)
	wantCond(t, "Gateway", g.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 3)
	if len(g.Addresses) != 1 || g.Addresses[0].Value != "10.0.0.7" || *g.Addresses[0].Type != gw.IPAddressType {
		t.Errorf("addresses %+v, want the cluster IP of Service gw-ours", g.Addresses)
	}
	if len(g.Listeners) != 3 {
		t.Fatalf("listeners %+v, want 3", g.Listeners)
	}
	http, tcp, plain := g.Listeners[0], g.Listeners[1], g.Listeners[2]
	// good, missing, kind and foreign attach (their backends do not
	// decide attachment); nosection does not.
	if http.AttachedRoutes != 4 {
		t.Errorf("http attachedRoutes %d, want 4", http.AttachedRoutes)
	}
	if len(http.SupportedKinds) != 2 || http.SupportedKinds[0].Kind != "HTTPRoute" || http.SupportedKinds[1].Kind != "GRPCRoute" {
		t.Errorf("http supportedKinds %+v", http.SupportedKinds)
	}
	for _, l := range []gw.ListenerStatus{http, tcp, plain} {
		wantCond(t, "listener "+string(l.Name), l.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 3)
		wantCond(t, "listener "+string(l.Name), l.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 3)
	}
	wantCond(t, "listener http", http.Conditions, "Conflicted", metav1.ConditionFalse, "NoConflicts", 3)
	wantCond(t, "listener http", http.Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", 3)
	wantCond(t, "listener tcp", tcp.Conditions, "Conflicted", metav1.ConditionTrue, "ProtocolConflict", 3)
	wantCond(t, "listener plain", plain.Conditions, "ResolvedRefs", metav1.ConditionFalse, "InvalidRouteKinds", 3)
	if len(plain.SupportedKinds) != 0 {
		t.Errorf("plain supportedKinds %+v, want none (TCPRoute on HTTP)", plain.SupportedKinds)
	}

	parents := func(name string) []gw.RouteParentStatus {
		return st.Routes[gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "app", Name: name}]
	}
	good := parents("good")
	if len(good) != 1 || good[0].ParentRef.Name != "gw" || good[0].ControllerName != gatewayapi.ControllerName {
		t.Fatalf("good parents %+v, want only the entry of our Gateway", good)
	}
	wantCond(t, "good", good[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 4)
	wantCond(t, "good", good[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", 4)
	for name, reason := range map[string]string{"missing": "BackendNotFound", "kind": "InvalidKind", "foreign": "RefNotPermitted"} {
		ps := parents(name)
		if len(ps) != 1 {
			t.Fatalf("%s parents %+v", name, ps)
		}
		wantCond(t, name, ps[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 4)
		wantCond(t, name, ps[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, reason, 4)
	}
	ns := parents("nosection")
	if len(ns) != 1 {
		t.Fatalf("nosection parents %+v", ns)
	}
	wantCond(t, "nosection", ns[0].Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingParent", 4)
}

// A ReferenceGrant in the backend's namespace turns RefNotPermitted into
// ResolvedRefs.
func TestStatusReferenceGrant(t *testing.T) {
	st := gatewayapi.ConvertWithStatus(statusInput(true), gatewayapi.Options{}, time.Now()).Status
	ps := st.Routes[gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "app", Name: "foreign"}]
	if len(ps) != 1 {
		t.Fatalf("parents %+v", ps)
	}
	wantCond(t, "foreign", ps[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", 4)
}

// A ReferenceGrant allows the route kind it names: one from HTTPRoute does
// not let a GRPCRoute refer across namespaces; one from GRPCRoute does.
func TestStatusReferenceGrantKind(t *testing.T) {
	in := statusInput(true)
	in.GRPCRoutes = []*gw.GRPCRoute{{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "rpc", Generation: 1}, Spec: gw.GRPCRouteSpec{
		CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "gw", Namespace: ptrTo(gw.Namespace("edge"))}}},
		Rules: []gw.GRPCRouteRule{{BackendRefs: []gw.GRPCBackendRef{{BackendRef: gw.BackendRef{BackendObjectReference: gw.BackendObjectReference{
			Name: "db", Namespace: ptrTo(gw.Namespace("shared")), Port: ptrTo(gw.PortNumber(80))}}}}}},
	}}}
	key := gatewayapi.RouteKey{Kind: "GRPCRoute", Namespace: "app", Name: "rpc"}
	ps := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, time.Now()).Status.Routes[key]
	if len(ps) != 1 {
		t.Fatalf("parents %+v", ps)
	}
	wantCond(t, "rpc with an HTTPRoute grant", ps[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, "RefNotPermitted", 1)
	in.ReferenceGrants[0].Spec.From = append(in.ReferenceGrants[0].Spec.From, gw.ReferenceGrantFrom{Group: gw.GroupName, Kind: "GRPCRoute", Namespace: "app"})
	ps = gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, time.Now()).Status.Routes[key]
	wantCond(t, "rpc with a GRPCRoute grant", ps[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", 1)
}

// A route no listener accepts still has its backends resolved for its
// ResolvedRefs, without an error for them: only the attachment is reported.
func TestStatusResolvesRefsOfUnattachedRoute(t *testing.T) {
	in := statusInput(false)
	r := in.HTTPRoutes[4].DeepCopy() // nosection
	r.Name = "nosection-missing"
	r.Spec.Rules[0].BackendRefs[0].Name = "nope"
	in.HTTPRoutes = append(in.HTTPRoutes, r)
	res := gatewayapi.ConvertWithStatus(in, gatewayapi.Options{}, time.Now())
	ps := res.Status.Routes[gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "app", Name: "nosection-missing"}]
	if len(ps) != 1 {
		t.Fatalf("parents %+v", ps)
	}
	wantCond(t, "nosection-missing", ps[0].Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingParent", 4)
	wantCond(t, "nosection-missing", ps[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound", 4)
	var mine []string
	for _, e := range res.Errors {
		if e.Source == "HTTPRoute app/nosection-missing" {
			mine = append(mine, e.Error())
		}
	}
	if len(mine) != 1 || !strings.Contains(mine[0], "NoMatchingParent") {
		t.Errorf("errors of the route %q, want only its NoMatchingParent", mine)
	}
}
