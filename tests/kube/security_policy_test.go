package kube

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1alpha1 "istio.io/api/meta/v1alpha1"
	securityapi "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	securityv1beta1 "istio.io/client-go/pkg/apis/security/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/kube/status"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	cfgschema "github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// RequestAuthentications and AuthorizationPolicies on a real API server,
// written as security.istio.io/v1 and as v1beta1: the valid ones reach
// /debug/configz (with the dry-run annotation kept); an invalid one of
// each kind passes the CRD's schema but not istiod's validation, is not
// served, is named with its field in /debug/configz and gets Valid=False
// naming the field; fixing it serves it and clears the status.
func TestSecurityPoliciesFromKubernetes(t *testing.T) {
	c, ns := newCluster(t, "security")
	e := clientEnv(t, c, ns)
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns},
		PodName: "wayfinder-0", PodNamespace: ns})
	ras := e.istio.SecurityV1().RequestAuthentications(ns)
	aps := e.istio.SecurityV1().AuthorizationPolicies(ns)
	gwSelector := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "ingressgateway"}}

	_, err := ras.Create(ctx, &securityv1.RequestAuthentication{
		ObjectMeta: metav1.ObjectMeta{Name: "jwt"},
		Spec: securityapi.RequestAuthentication{Selector: gwSelector,
			JwtRules: []*securityapi.JWTRule{{Issuer: "https://issuer.example.com", JwksUri: "https://issuer.example.com/jwks.json"}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = e.istio.SecurityV1beta1().RequestAuthentications(ns).Create(ctx, &securityv1beta1.RequestAuthentication{
		ObjectMeta: metav1.ObjectMeta{Name: "jwt-beta"},
		Spec: securityapi.RequestAuthentication{TargetRefs: []*typev1beta1.PolicyTargetReference{
			{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "public"}},
			JwtRules: []*securityapi.JWTRule{{Issuer: "https://beta.example.com"}}},
	}, metav1.CreateOptions{})
	e.must(err)
	// Inline jwks that is not JSON passes the CRD and fails istiod's
	// validateJwtRule.
	_, err = ras.Create(ctx, &securityv1.RequestAuthentication{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-jwt"},
		Spec: securityapi.RequestAuthentication{Selector: gwSelector,
			JwtRules: []*securityapi.JWTRule{{Issuer: "https://issuer.example.com", Jwks: "not json"}}},
	}, metav1.CreateOptions{})
	e.must(err)

	_, err = aps.Create(ctx, &securityv1.AuthorizationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow", Annotations: map[string]string{"istio.io/dry-run": "true"}},
		Spec: securityapi.AuthorizationPolicy{Selector: gwSelector, Action: securityapi.AuthorizationPolicy_ALLOW,
			Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{Source: &securityapi.Source{RemoteIpBlocks: []string{"203.0.113.0/24"}}}}}}},
	}, metav1.CreateOptions{})
	e.must(err)
	_, err = e.istio.SecurityV1beta1().AuthorizationPolicies(ns).Create(ctx, &securityv1beta1.AuthorizationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-beta"},
		Spec: securityapi.AuthorizationPolicy{Selector: gwSelector, Action: securityapi.AuthorizationPolicy_DENY,
			Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{Paths: []string{"/admin/{**}"}}}}}}},
	}, metav1.CreateOptions{})
	e.must(err)
	// A CIDR with a prefix too long passes the CRD and fails istiod's
	// security.ValidateIPs.
	_, err = aps.Create(ctx, &securityv1.AuthorizationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-cidr"},
		Spec: securityapi.AuthorizationPolicy{Selector: gwSelector,
			Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{Source: &securityapi.Source{IpBlocks: []string{"10.0.0.0/8", "10.0.0.0/33"}}}}}}},
	}, metav1.CreateOptions{})
	e.must(err)

	token := debugAdminToken(t, ns)
	configz := func() debugapi.Configz {
		var cz debugapi.Configz
		req, err := http.NewRequest(http.MethodGet, "http://"+e.server.HTTPAddr().String()+"/debug/configz", nil)
		e.must(err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		e.must(err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		e.must(err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/debug/configz: %s: %s", resp.Status, body)
		}
		e.must(json.Unmarshal(body, &cz))
		return cz
	}
	served := func(cz debugapi.Configz, kind, name string) bool {
		return slices.ContainsFunc(cz.Configs, func(o debugapi.ConfigzObject) bool {
			return o.Kind == kind && o.Namespace == ns && o.Name == name
		})
	}
	named := func(cz debugapi.Configz, kind, name, field string) bool {
		return slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
			return ce.Kind == kind && ce.Name == name && ce.Field == field
		})
	}
	poll.Seen(t, "the valid policies in configz and the invalid ones reported", func() (string, bool) {
		cz := configz()
		return fmt.Sprintf("configs %+v errors %+v", cz.Configs, cz.Errors),
			served(cz, "RequestAuthentication", "jwt") && served(cz, "RequestAuthentication", "jwt-beta") &&
				served(cz, "AuthorizationPolicy", "allow") && served(cz, "AuthorizationPolicy", "deny-beta") &&
				!served(cz, "RequestAuthentication", "bad-jwt") && !served(cz, "AuthorizationPolicy", "bad-cidr") &&
				named(cz, "RequestAuthentication", "bad-jwt", "spec.jwtRules[0].jwks") &&
				named(cz, "AuthorizationPolicy", "bad-cidr", "spec.rules[0].from[0].source.ipBlocks[1]")
	}, apiPoll...)
	if a := e.server.Store().Get(cfgschema.AuthorizationPolicy, ns, "allow"); a == nil || a.Annotations["istio.io/dry-run"] != "true" {
		t.Fatalf("the served policy lost its dry-run annotation: %v", a)
	}

	valid := func(s *metav1alpha1.IstioStatus) string {
		for _, c := range s.GetConditions() {
			if c.GetType() == status.ConditionValid {
				return c.GetStatus() + "/" + c.GetReason() + ": " + c.GetMessage()
			}
		}
		return ""
	}
	waitStatus := func(kind, name, what string, cond func(string) bool) {
		t.Helper()
		poll.Seen(t, kind+" "+name+": "+what, func() (string, bool) {
			var s *metav1alpha1.IstioStatus
			if kind == "RequestAuthentication" {
				o, err := ras.Get(ctx, name, metav1.GetOptions{})
				e.must(err)
				s = &o.Status
			} else {
				o, err := aps.Get(ctx, name, metav1.GetOptions{})
				e.must(err)
				s = &o.Status
			}
			return valid(s), cond(valid(s))
		}, apiPoll...)
	}
	isValid := func(v string) bool { return strings.HasPrefix(v, "True/Valid") }
	waitStatus("RequestAuthentication", "bad-jwt", "Valid=False naming the field", func(v string) bool {
		return strings.HasPrefix(v, "False/Invalid") && strings.Contains(v, "spec.jwtRules[0].jwks")
	})
	waitStatus("AuthorizationPolicy", "bad-cidr", "Valid=False naming the field", func(v string) bool {
		return strings.HasPrefix(v, "False/Invalid") && strings.Contains(v, "spec.rules[0].from[0].source.ipBlocks[1]")
	})
	waitStatus("RequestAuthentication", "jwt-beta", "Valid=True", isValid)
	waitStatus("AuthorizationPolicy", "deny-beta", "Valid=True", isValid)

	// The fixes are served and their status cleared.
	badJWT, err := ras.Get(ctx, "bad-jwt", metav1.GetOptions{})
	e.must(err)
	badJWT.Spec.JwtRules[0].Jwks = `{"keys":[{"kty":"RSA","e":"AQAB","n":"xAE7eB6qugXyCAG3yhh7pkDkT65pHymX"}]}`
	_, err = ras.Update(ctx, badJWT, metav1.UpdateOptions{})
	e.must(err)
	badCIDR, err := aps.Get(ctx, "bad-cidr", metav1.GetOptions{})
	e.must(err)
	badCIDR.Spec.Rules[0].From[0].Source.IpBlocks[1] = "10.0.0.0/24"
	_, err = aps.Update(ctx, badCIDR, metav1.UpdateOptions{})
	e.must(err)
	poll.Seen(t, "the fixed policies served", func() (string, bool) {
		cz := configz()
		return fmt.Sprintf("%+v %+v", cz.Configs, cz.Errors),
			served(cz, "RequestAuthentication", "bad-jwt") && served(cz, "AuthorizationPolicy", "bad-cidr") &&
				!named(cz, "RequestAuthentication", "bad-jwt", "spec.jwtRules[0].jwks") &&
				!named(cz, "AuthorizationPolicy", "bad-cidr", "spec.rules[0].from[0].source.ipBlocks[1]")
	}, apiPoll...)
	waitStatus("RequestAuthentication", "bad-jwt", "Valid=True after the fix", isValid)
	waitStatus("AuthorizationPolicy", "bad-cidr", "Valid=True after the fix", isValid)
}
