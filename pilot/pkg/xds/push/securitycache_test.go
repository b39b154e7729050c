package push

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// Gateway security is computed once while nothing it reads changes, push
// after push (a push for one VirtualService reuses it), and again when a
// policy changes; a route-level policy is never reused (the routes decide
// it).
func TestSecurityReusedAcrossPushes(t *testing.T) {
	gw := config.Config{Meta: config.Meta{Kind: schema.Gateway, Namespace: "istio-system", Name: "public"},
		Spec: &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{{
			Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*/*"}}}}}
	policy := func(name string, refs ...*typev1beta1.PolicyTargetReference) config.Config {
		spec := &securityv1beta1.AuthorizationPolicy{TargetRefs: refs, Rules: []*securityv1beta1.Rule{{
			To: []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Methods: []string{"GET"}}}}}}}
		if len(refs) == 0 {
			spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "ingressgateway"}}
		}
		return config.Config{Meta: config.Meta{Kind: schema.AuthorizationPolicy, Namespace: "istio-system", Name: name}, Spec: spec}
	}
	proxy := &model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}}
	tr := New(Options{})
	secure := func(store model.ConfigStore) *model.GatewaySecurity {
		st := &State{Push: model.NewScopedPushContext(model.Scoping{}, store)}
		push, _ := tr.withSecurity(st, st.Push, proxy, "k")
		return push.GatewaySecurity()
	}
	store := memory.New([]config.Config{gw, policy("a")})
	first := secure(store)
	if first == nil || secure(store) != first {
		t.Fatal("the same policies in a new push were translated again")
	}
	changed := secure(memory.New([]config.Config{gw, policy("a"), policy("b")}))
	if changed == first || len(changed.Policies) != 2 {
		t.Errorf("a new policy reused the old security: %v", changed.GetPolicies())
	}
	route := memory.New([]config.Config{gw, policy("a"), policy("r", &typev1beta1.PolicyTargetReference{Group: "networking.istio.io", Kind: "VirtualService", Name: "x"})})
	if r1, r2 := secure(route), secure(route); r1 == r2 {
		t.Error("security with a route-level policy was reused across pushes")
	}
}
