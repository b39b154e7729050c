package security

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/route"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

var ingress = &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}

func push(cfgs ...config.Config) *model.PushContext {
	base := []config.Config{{
		Meta: config.Meta{Kind: schema.Gateway, Namespace: "istio-system", Name: "public"},
		Spec: &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{{
			Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*/*"}}}},
	}, {
		Meta: config.Meta{Kind: schema.VirtualService, Namespace: "shop", Name: "cart"},
		Spec: &networking.VirtualService{Hosts: []string{"cart.example.com"}, Gateways: []string{"istio-system/public"},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "cart.shop.svc.cluster.local"}}}}}},
	}}
	return model.NewScopedPushContext(model.Scoping{}, memory.New(append(base, cfgs...)))
}

func allow(ns, name string, sel map[string]string, refs ...*typev1beta1.PolicyTargetReference) config.Config {
	spec := &securityv1beta1.AuthorizationPolicy{TargetRefs: refs, Rules: []*securityv1beta1.Rule{{
		To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET"}}}}}}}
	if sel != nil {
		spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: sel}
	}
	return config.Config{Meta: config.Meta{Kind: schema.AuthorizationPolicy, Namespace: ns, Name: name}, Spec: spec}
}

// No policy: nothing to place, and the group key is untouched. The same
// policies give one key; a different policy, another; a policy that
// selects other proxies, none at all for this one.
func TestForProxyKeys(t *testing.T) {
	if s := ForProxy(push(), ingress, Options{}); s != nil {
		t.Fatalf("no policies: %+v", s)
	}
	sel := map[string]string{"istio": "ingressgateway"}
	a := ForProxy(push(allow("istio-system", "a", sel)), ingress, Options{})
	b := ForProxy(push(allow("istio-system", "a", sel)), ingress, Options{})
	if a == nil || a.Key == "" || a.Key != b.Key {
		t.Fatalf("equal input: %v and %v", a, b)
	}
	// An HTTP-only gateway has no TCP chains: no network filters, and no
	// warnings about HTTP-only fields on them.
	if len(a.AuthzHTTP) != 1 || len(a.AuthzTCP) != 0 || len(a.Policies) != 1 || a.Policies[0].Name != "a" {
		t.Errorf("ALLOW policy: http %d tcp %d policies %v", len(a.AuthzHTTP), len(a.AuthzTCP), a.Policies)
	}
	tcpGateway := config.Config{Meta: config.Meta{Kind: schema.Gateway, Namespace: "istio-system", Name: "tcp"},
		Spec: &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{{
			Port: &networking.Port{Number: 9000, Name: "tcp", Protocol: "TCP"}, Hosts: []string{"*"}}}}}
	if s := ForProxy(push(allow("istio-system", "a", sel), tcpGateway), ingress, Options{}); len(s.AuthzTCP) != 1 {
		t.Errorf("a gateway with a TCP server: %d network RBAC filters, want 1", len(s.AuthzTCP))
	}
	if c := ForProxy(push(allow("istio-system", "b", sel)), ingress, Options{}); c.Key == a.Key {
		t.Error("another policy object, same key (status attribution would be shared)")
	}
	if s := ForProxy(push(allow("istio-system", "a", map[string]string{"app": "other"})), ingress, Options{}); s != nil {
		t.Errorf("a policy selecting other proxies: %+v", s)
	}
}

// A policy targeting a VirtualService the gateway serves puts its
// per-route config on that object's routes only, on a copy: the
// translated routes are left as they were.
func TestRouteLevelConfig(t *testing.T) {
	ref := &typev1beta1.PolicyTargetReference{Group: "networking.istio.io", Kind: "VirtualService", Name: "cart"}
	p := push(allow("shop", "cart-get", nil, ref))
	s := ForProxy(p, ingress, Options{})
	origin := route.Origin("VirtualService", "shop", "cart")
	if s == nil || len(s.RouteConfigs[origin]) == 0 {
		t.Fatalf("route configs %v, want some for %s", s.GetRouteConfigs(), origin)
	}
	in := []*routev3.RouteConfiguration{{Name: "http.80", VirtualHosts: []*routev3.VirtualHost{{Name: "cart.example.com:80", Routes: []*routev3.Route{
		{StatPrefix: "vs/shop/cart/http/0"}, {StatPrefix: "vs/shop/other/http/0"},
	}}}}}
	out := route.ApplySecurity(in, s)
	if out[0] == in[0] || len(in[0].VirtualHosts[0].Routes[0].TypedPerFilterConfig) != 0 {
		t.Fatal("the translated routes were changed in place")
	}
	got := out[0].VirtualHosts[0].Routes
	if len(got[0].TypedPerFilterConfig) == 0 || len(got[1].TypedPerFilterConfig) != 0 {
		t.Errorf("per-route configs: cart %v, other %v", got[0].TypedPerFilterConfig, got[1].TypedPerFilterConfig)
	}
}
