package gatewayapi_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func listenerSet(ns, name string, created time.Time, ls ...gw.ListenerEntry) *gw.ListenerSet {
	return &gw.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec:       gw.ListenerSetSpec{ParentRef: gw.ParentGatewayReference{Name: "edge", Namespace: ptrTo(gw.Namespace("edge-ns"))}, Listeners: ls},
	}
}

func allowing(from gw.FromNamespaces) *gw.Gateway {
	g := edge.DeepCopy()
	g.Spec.AllowedListeners = &gw.AllowedListeners{Namespaces: &gw.ListenerNamespaces{From: &from}}
	return g
}

func setCondition(t *testing.T, st gatewayapi.Status, ns, name, typ string) metav1.Condition {
	t.Helper()
	s, ok := st.ListenerSets[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		t.Fatalf("no status for ListenerSet %s/%s", ns, name)
	}
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("ListenerSet %s/%s has no %s condition", ns, name, typ)
	return metav1.Condition{}
}

// A Gateway allows no ListenerSet unless spec.allowedListeners says so
// (None by default); Same admits its own namespace only, All every one.
// A set not allowed is NotAllowed and generates nothing; the Gateway counts
// the ones attached.
func TestListenerSetAllowedListeners(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := gw.ListenerEntry{Name: "extra", Port: 8080, Protocol: gw.HTTPProtocolType}
	same := listenerSet("edge-ns", "same", now, entry)
	other := listenerSet("team", "other", now, gw.ListenerEntry{Name: "extra", Port: 9090, Protocol: gw.HTTPProtocolType})
	cases := []struct {
		name     string
		gateway  *gw.Gateway
		same     string // reason of same's Accepted condition
		other    string
		attached int32
	}{
		{"default None", edge, "NotAllowed", "NotAllowed", 0},
		{"Same", allowing(gw.NamespacesFromSame), "Accepted", "NotAllowed", 1},
		{"All", allowing(gw.NamespacesFromAll), "Accepted", "Accepted", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := gatewayapi.ConvertWithStatus(gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class},
				Gateways: []*gw.Gateway{tc.gateway}, ListenerSets: []*gw.ListenerSet{same, other}}, gatewayapi.Options{}, now)
			if got := setCondition(t, res.Status, "edge-ns", "same", "Accepted").Reason; got != tc.same {
				t.Errorf("edge-ns/same Accepted reason %s, want %s", got, tc.same)
			}
			if got := setCondition(t, res.Status, "team", "other", "Accepted").Reason; got != tc.other {
				t.Errorf("team/other Accepted reason %s, want %s", got, tc.other)
			}
			gs := res.Status.Gateways[types.NamespacedName{Namespace: "edge-ns", Name: "edge"}]
			if gs.AttachedListenerSets == nil || *gs.AttachedListenerSets != tc.attached {
				t.Errorf("attachedListenerSets %v, want %d", gs.AttachedListenerSets, tc.attached)
			}
			var generated int
			for _, c := range res.Configs {
				if c.Kind == schema.Gateway && c.Source != gatewayapi.Source("Gateway", tc.gateway) {
					generated++
					if c.Namespace != "edge-ns" || c.Spec.(interface{ GetSelector() map[string]string }).GetSelector()[gatewayapi.GatewayNameLabel] != "edge" {
						t.Errorf("%s: a ListenerSet's listener is served by its parent's proxies, in the parent's namespace", c.Key())
					}
				}
			}
			if generated != int(tc.attached) {
				t.Errorf("%d Istio Gateways for ListenerSets, want %d", generated, tc.attached)
			}
		})
	}
}

// Merge order decides conflicts: the Gateway's own listeners, then the
// oldest ListenerSet, then namespace/name; the later of two listeners on
// one port and hostname loses (HostnameConflict), whatever the names say.
func TestListenerSetConflictOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := gw.ListenerEntry{Name: "l", Port: 8080, Protocol: gw.HTTPProtocolType, Hostname: ptrTo(gw.Hostname("a.example.com"))}
	older := listenerSet("edge-ns", "zz-older", t0, entry)
	newer := listenerSet("edge-ns", "aa-newer", t0.Add(time.Hour), entry)
	tieB := listenerSet("edge-ns", "b", t0.Add(2*time.Hour), gw.ListenerEntry{Name: "m", Port: 9090, Protocol: gw.HTTPProtocolType})
	tieA := listenerSet("edge-ns", "a", t0.Add(2*time.Hour), gw.ListenerEntry{Name: "m", Port: 9090, Protocol: gw.HTTPProtocolType})
	gwOwn := listenerSet("edge-ns", "own", t0, gw.ListenerEntry{Name: "http", Port: 80, Protocol: gw.TCPProtocolType})
	res := gatewayapi.ConvertWithStatus(gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{allowing(gw.NamespacesFromSame)},
		ListenerSets: []*gw.ListenerSet{newer, older, tieB, tieA, gwOwn}}, gatewayapi.Options{}, t0)
	for _, tc := range []struct {
		set, reason string
	}{
		{"zz-older", "Accepted"}, {"aa-newer", "ListenersNotValid"},
		{"a", "Accepted"}, {"b", "ListenersNotValid"},
		{"own", "ListenersNotValid"},
	} {
		if got := setCondition(t, res.Status, "edge-ns", tc.set, "Accepted").Reason; got != tc.reason {
			t.Errorf("%s: Accepted reason %s, want %s", tc.set, got, tc.reason)
		}
	}
	own := res.Status.ListenerSets[types.NamespacedName{Namespace: "edge-ns", Name: "own"}].Listeners[0]
	if c := own.Conditions[len(own.Conditions)-1]; c.Type != "Conflicted" || c.Status != metav1.ConditionTrue || c.Reason != "ProtocolConflict" {
		t.Errorf("TCP on the Gateway's HTTP port: %+v, want Conflicted True ProtocolConflict", c)
	}
	// The Gateway's own listener keeps its status.
	for _, c := range res.Status.Gateways[types.NamespacedName{Namespace: "edge-ns", Name: "edge"}].Listeners[0].Conditions {
		if (c.Type == "Conflicted") != (c.Status == metav1.ConditionFalse) {
			t.Errorf("the Gateway's listener: %s %s, want Conflicted False and the others True", c.Type, c.Status)
		}
	}
}

// A ListenerSet's Secret of its own namespace reaches the parent Gateway's
// proxies as kubernetes-gateway://NS/NAME, lent to that listener's
// generated Gateway only; a Secret of a third namespace needs a
// ReferenceGrant from ListenerSets (one from Gateways does not do).
func TestListenerSetCertificates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tls := func(ns string) *gw.ListenerTLSConfig {
		ref := gw.SecretObjectReference{Name: "cert"}
		if ns != "" {
			ref.Namespace = ptrTo(gw.Namespace(ns))
		}
		return &gw.ListenerTLSConfig{CertificateRefs: []gw.SecretObjectReference{ref}}
	}
	own := listenerSet("team", "own", now, gw.ListenerEntry{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType,
		Hostname: ptrTo(gw.Hostname("own.example.com")), TLS: tls("")})
	borrowed := listenerSet("team", "borrowed", now, gw.ListenerEntry{Name: "https", Port: 443, Protocol: gw.HTTPSProtocolType,
		Hostname: ptrTo(gw.Hostname("borrowed.example.com")), TLS: tls("certs")})
	grant := func(kind gw.Kind) *gw.ReferenceGrant {
		return &gw.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "g"}, Spec: gw.ReferenceGrantSpec{
			From: []gw.ReferenceGrantFrom{{Group: gw.GroupName, Kind: kind, Namespace: "team"}},
			To:   []gw.ReferenceGrantTo{{Kind: "Secret"}}}}
	}
	for _, tc := range []struct {
		name     string
		grant    *gw.ReferenceGrant
		borrowed bool
	}{
		{"grant from Gateways", grant("Gateway"), false},
		{"grant from ListenerSets", grant("ListenerSet"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := gatewayapi.ConvertWithStatus(gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class},
				Gateways: []*gw.Gateway{allowing(gw.NamespacesFromAll)}, ListenerSets: []*gw.ListenerSet{own, borrowed},
				ReferenceGrants: []*gw.ReferenceGrant{tc.grant}}, gatewayapi.Options{}, now)
			ownKey := config.Key{Kind: schema.Gateway, Namespace: "edge-ns", Name: gatewayapi.ListenerSetIstioGatewayName("edge", "team", "own", "https")}
			if _, ok := res.SecretGrants.GeneratedGateway(ownKey, gatewayapi.Source("ListenerSet", own)); !ok {
				t.Errorf("%s is not bound to edge's proxies", ownKey)
			}
			if !res.SecretGrants.GatewayMayUse(ownKey, model.SecretRef{Namespace: "team", Name: "cert"}) {
				t.Errorf("%s may not use team/cert", ownKey)
			}
			if res.SecretGrants.GatewayMayUse(ownKey, model.SecretRef{Namespace: "certs", Name: "cert"}) {
				t.Errorf("%s may use certs/cert, which it does not reference", ownKey)
			}
			bKey := config.Key{Kind: schema.Gateway, Namespace: "edge-ns", Name: gatewayapi.ListenerSetIstioGatewayName("edge", "team", "borrowed", "https")}
			if got := res.SecretGrants.GatewayMayUse(bKey, model.SecretRef{Namespace: "certs", Name: "cert"}); got != tc.borrowed {
				t.Errorf("%s may use certs/cert: %v, want %v", bKey, got, tc.borrowed)
			}
			var served bool
			for _, c := range res.Configs {
				if c.Key() == bKey {
					served = true
				}
			}
			if served != tc.borrowed {
				t.Errorf("borrowed listener served %v, want %v", served, tc.borrowed)
			}
		})
	}
}

// Generated names are stable and apart: the same set name and listener in
// two namespaces, or a Gateway listener of the same name, never share one.
func TestListenerSetIstioGatewayNames(t *testing.T) {
	a := gatewayapi.ListenerSetIstioGatewayName("edge", "team-a", "shop", "http")
	b := gatewayapi.ListenerSetIstioGatewayName("edge", "team-b", "shop", "http")
	own := gatewayapi.IstioGatewayName("edge", "http")
	if a == b || a == own || b == own {
		t.Errorf("names collide: %s %s %s", a, b, own)
	}
	if a != gatewayapi.ListenerSetIstioGatewayName("edge", "team-a", "shop", "http") {
		t.Error("name not stable")
	}
	long := gatewayapi.ListenerSetIstioGatewayName("a-very-long-gateway-name-for-testing", "ns", "a-very-long-listener-set-name", "listener")
	if len(long) > 63 {
		t.Errorf("%s is longer than 63", long)
	}
}

// The proxy deployer opens the ports of the ListenerSets a Gateway allows,
// oldest set first; a set it does not allow, or of another parent, adds none.
func TestListenerSetListeners(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newer := listenerSet("edge-ns", "a", t0.Add(time.Hour), gw.ListenerEntry{Name: "x", Port: 9090, Protocol: gw.HTTPProtocolType})
	older := listenerSet("edge-ns", "b", t0, gw.ListenerEntry{Name: "y", Port: 9443, Protocol: gw.TCPProtocolType})
	foreign := listenerSet("team", "c", t0, gw.ListenerEntry{Name: "z", Port: 7070, Protocol: gw.HTTPProtocolType})
	otherParent := listenerSet("edge-ns", "d", t0, gw.ListenerEntry{Name: "w", Port: 6060, Protocol: gw.HTTPProtocolType})
	otherParent.Spec.ParentRef.Name = "other"
	in := gatewayapi.Input{ListenerSets: []*gw.ListenerSet{newer, older, foreign, otherParent}}
	var ports []gw.PortNumber
	for _, l := range gatewayapi.ListenerSetListeners(in, allowing(gw.NamespacesFromSame)) {
		ports = append(ports, l.Port)
	}
	if len(ports) != 2 || ports[0] != 9443 || ports[1] != 9090 {
		t.Errorf("ports %v, want [9443 9090]", ports)
	}
	if got := gatewayapi.ListenerSetListeners(in, edge); len(got) != 0 {
		t.Errorf("a Gateway allowing no ListenerSet gets listeners %v", got)
	}
}
