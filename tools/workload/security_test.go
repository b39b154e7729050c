package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
	"github.com/wayfinder-dev/wayfinder/pkg/blockyaml"
)

// TestSecurityScenarioLoadsAndAnalyzesClean writes a scenario with
// policies and runs it through what `wayfinder analyze` runs: the file
// loader (parsing and validation) and the analysis (the server's push
// context and translators, plus the policy checks: selects a gateway,
// principals with a RequestAuthentication, paths some route serves). No
// finding at all may come back, or the benchmark would measure a
// gateway serving errors.
func TestSecurityScenarioLoadsAndAnalyzesClean(t *testing.T) {
	for _, o := range []Options{
		{Services: 12, Endpoints: 1, AuthorizationPolicies: 30, RequestAuthentications: 4},
		{Services: 3, Endpoints: 1, AuthorizationPolicies: 10}, // ALLOW rules without principals
		{Services: 3, Endpoints: 1, RequestAuthentications: 2},
	} {
		dir := t.TempDir()
		if err := Write(dir, o); err != nil {
			t.Fatal(err)
		}
		cfgs, srcErrs, _, err := analysis.Load([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range analysis.Analyze(cfgs, srcErrs, analysis.Options{}) {
			t.Errorf("%+v: %v", o, e)
		}
		var ras, aps int
		actions := map[securityv1beta1.AuthorizationPolicy_Action]int{}
		for _, c := range cfgs {
			switch spec := c.Spec.(type) {
			case *securityv1beta1.RequestAuthentication:
				ras++
				if c.Namespace != "istio-system" || spec.GetSelector().GetMatchLabels()["istio"] != "ingressgateway" {
					t.Errorf("%s: not selecting the ingress gateway from istio-system", c.Key())
				}
				r := spec.GetJwtRules()
				if len(r) != 1 || r[0].GetJwks() != BenchJWKS || r[0].GetJwksUri() != "" || !strings.HasPrefix(r[0].GetIssuer(), "https://issuer-") {
					t.Errorf("%s: jwtRules %v", c.Key(), r)
				}
			case *securityv1beta1.AuthorizationPolicy:
				aps++
				actions[spec.GetAction()]++
				if c.Namespace != "istio-system" || spec.GetSelector().GetMatchLabels()["istio"] != "ingressgateway" || len(spec.GetRules()) != 1 {
					t.Errorf("%s: %v", c.Key(), spec)
				}
			}
		}
		if ras != o.RequestAuthentications || aps != o.AuthorizationPolicies {
			t.Errorf("%+v: loaded %d RequestAuthentications and %d AuthorizationPolicies", o, ras, aps)
		}
		if o.AuthorizationPolicies == 30 {
			want := map[securityv1beta1.AuthorizationPolicy_Action]int{
				securityv1beta1.AuthorizationPolicy_ALLOW: 21, securityv1beta1.AuthorizationPolicy_DENY: 6, securityv1beta1.AuthorizationPolicy_AUDIT: 3}
			for a, n := range want {
				if actions[a] != n {
					t.Errorf("%d %s policies, want %d (all: %v)", actions[a], a, n, actions)
				}
			}
		}
	}
}

// TestSecurityPoliciesReferToTheScenario checks that the policies speak
// of the scenario's own hosts and issuers, so that they translate to
// rules a request of the benchmark could match.
func TestSecurityPoliciesReferToTheScenario(t *testing.T) {
	allow := string(AuthorizationPolicy(13, 10, 4))
	for _, want := range []string{"action: ALLOW", Issuer(1) + "/*", AppHost(3), "/api/*"} {
		if !strings.Contains(allow, want) {
			t.Errorf("ALLOW policy lacks %q:\n%s", want, allow)
		}
	}
	deny := string(AuthorizationPolicy(258, 1000, 4))
	for _, want := range []string{"action: DENY", "10.1.2.0/24", AppHost(258), "notPaths"} {
		if !strings.Contains(deny, want) {
			t.Errorf("DENY policy lacks %q:\n%s", want, deny)
		}
	}
	if audit := string(AuthorizationPolicy(9, 10, 4)); !strings.Contains(audit, "action: AUDIT") || !strings.Contains(audit, "/admin/*") {
		t.Errorf("AUDIT policy:\n%s", audit)
	}
}

// TestSecurityFileFollowsTheOptions checks that a scenario without
// policies leaves no security file behind from an earlier one.
func TestSecurityFileFollowsTheOptions(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Options{Services: 2, AuthorizationPolicies: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SecurityFile)); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, Options{Services: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SecurityFile)); !os.IsNotExist(err) {
		t.Fatalf("security file still there: %v", err)
	}
	for _, bad := range []Options{{Services: 1, AuthorizationPolicies: -1}, {Services: 1, RequestAuthentications: 1 << 17}} {
		if err := Write(t.TempDir(), bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestSecurityIsInTheFastYAMLSubset: as the rest of the workload, the
// policies take the fast parser, so the comparison measures the
// policies' translation, not a slower parse.
func TestSecurityIsInTheFastYAMLSubset(t *testing.T) {
	for _, doc := range [][]byte{RequestAuthentication(0), AuthorizationPolicy(0, 10, 2), AuthorizationPolicy(0, 10, 0),
		AuthorizationPolicy(7, 10, 2), AuthorizationPolicy(9, 10, 2)} {
		if _, ok := blockyaml.Decode(doc); !ok {
			t.Errorf("outside blockyaml's subset:\n%s", doc)
		}
	}
}
