package gatewayapi_test

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// serverHostsOf converts one Gateway of namespace edge-ns with listener l
// and returns the hosts of its one generated server.
func serverHostsOf(t *testing.T, l gw.Listener, namespaces map[string]map[string]string) []string {
	t.Helper()
	g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"},
		Spec: gw.GatewaySpec{GatewayClassName: "wayfinder", Listeners: []gw.Listener{l}}}
	in := gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}}
	if namespaces != nil {
		in.Namespaces = func(name string) map[string]string { return namespaces[name] }
		in.NamespaceNames = func() []string {
			var out []string
			for n := range namespaces {
				out = append(out, n)
			}
			return out // unsorted on purpose: the hosts are sorted
		}
	}
	cfgs, _ := gatewayapi.Convert(in, gatewayapi.Options{})
	for _, c := range cfgs {
		if c.Kind == schema.Gateway {
			if c.Annotations[model.GatewayAPIListenerAnnotation] != string(l.Name) {
				t.Errorf("%s: annotation %s = %q, want the listener name %q", c.Key(), model.GatewayAPIListenerAnnotation,
					c.Annotations[model.GatewayAPIListenerAnnotation], l.Name)
			}
			return c.Spec.(*networking.Gateway).GetServers()[0].GetHosts()
		}
	}
	t.Fatalf("no Gateway generated for listener %s", l.Name)
	return nil
}

// A generated server's hosts name each namespace the listener admits, as
// istiod 1.29 writes them (conversion.go buildHostnameMatch and
// namespacesFromSelector): Same the Gateway's, All "*", a Selector the
// matching namespaces (kubernetes.io/metadata.name implied, as istiod's
// toNamespaceSet). Unlike istiod, the Gateway's own namespace is always
// there (the generated VirtualServices live in it), and a Selector that is
// missing or does not parse admits no other namespace (istiod: all, none).
func TestServerHostsNameAllowedNamespaces(t *testing.T) {
	from := func(f gw.FromNamespaces, sel *metav1.LabelSelector) *gw.AllowedRoutes {
		return &gw.AllowedRoutes{Namespaces: &gw.RouteNamespaces{From: &f, Selector: sel}}
	}
	host := gw.Hostname("*.example.com")
	namespaces := map[string]map[string]string{
		"edge-ns": nil, "team-a": {"edge-access": "yes"}, "team-b": {"edge-access": "yes"}, "team-c": {"edge-access": "no"},
	}
	for _, tc := range []struct {
		name string
		l    gw.Listener
		ns   map[string]map[string]string
		want []string
	}{
		{"default Same", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, Hostname: &host}, namespaces,
			[]string{"edge-ns/*.example.com"}},
		{"Same, no hostname", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, AllowedRoutes: from(gw.NamespacesFromSame, nil)}, namespaces,
			[]string{"edge-ns/*"}},
		{"All", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, Hostname: &host, AllowedRoutes: from(gw.NamespacesFromAll, nil)}, namespaces,
			[]string{"*/*.example.com"}},
		{"Selector by label", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, Hostname: &host,
			AllowedRoutes: from(gw.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"edge-access": "yes"}})}, namespaces,
			[]string{"edge-ns/*.example.com", "team-a/*.example.com", "team-b/*.example.com"}},
		{"Selector by name label", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
			AllowedRoutes: from(gw.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team-c"}})}, namespaces,
			[]string{"edge-ns/*", "team-c/*"}},
		{"Selector matching nothing", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
			AllowedRoutes: from(gw.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"nobody": "x"}})}, namespaces,
			[]string{"edge-ns/*"}},
		{"Selector without selector", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
			AllowedRoutes: from(gw.NamespacesFromSelector, nil)}, namespaces, []string{"edge-ns/*"}},
		{"Selector that does not parse", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
			AllowedRoutes: from(gw.NamespacesFromSelector, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}})},
			namespaces, []string{"edge-ns/*"}},
		{"Selector, no Namespaces known (file mode)", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType,
			AllowedRoutes: from(gw.NamespacesFromSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"edge-access": "yes"}})}, nil,
			[]string{"edge-ns/*"}},
		{"unknown From", gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, AllowedRoutes: from("Elsewhere", nil)}, namespaces,
			[]string{"edge-ns/*"}},
		{"TCP, hostname ignored", gw.Listener{Name: "tcp", Port: 5432, Protocol: gw.TCPProtocolType, Hostname: &host,
			AllowedRoutes: from(gw.NamespacesFromAll, nil)}, namespaces, []string{"*/*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := serverHostsOf(t, tc.l, tc.ns); !slices.Equal(got, tc.want) {
				t.Errorf("hosts %v, want %v", got, tc.want)
			}
		})
	}
}

// A route attaches by a Selector on kubernetes.io/metadata.name even when
// its Namespace object lacks the label (older clusters), as in istiod.
func TestSelectorImpliesNamespaceNameLabel(t *testing.T) {
	sel := gw.NamespacesFromSelector
	g := &gw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge-ns", Name: "edge"}, Spec: gw.GatewaySpec{
		GatewayClassName: "wayfinder",
		Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, AllowedRoutes: &gw.AllowedRoutes{Namespaces: &gw.RouteNamespaces{
			From: &sel, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team-a"}}}}}},
	}}
	r := routeTo("shop", "web")
	r.Namespace = "team-a"
	r.Spec.ParentRefs[0].Namespace = ptrTo(gw.Namespace("edge-ns"))
	cfgs, _ := gatewayapi.Convert(gatewayapi.Input{GatewayClasses: []*gw.GatewayClass{class}, Gateways: []*gw.Gateway{g}, HTTPRoutes: []*gw.HTTPRoute{r},
		Services: func(string, string) *corev1.Service { return nil }}, gatewayapi.Options{})
	var vs []string
	for _, c := range cfgs {
		if c.Kind == schema.VirtualService {
			vs = append(vs, c.Namespace+"/"+c.Name)
		}
	}
	if want := []string{"edge-ns/edge-http-shop-example-com-gwapi"}; !slices.Equal(vs, want) {
		t.Errorf("VirtualServices %v, want %v", vs, want)
	}
}
