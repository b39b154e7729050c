package authz

import (
	"slices"
	"strings"
	"testing"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

var gateway = policyattach.Proxy{Namespace: "foo", Labels: map[string]string{"istio": "ingressgateway"}}

// policy parses spec (protojson) as AuthorizationPolicy foo/p.
func policy(t *testing.T, spec string) Policy {
	t.Helper()
	s := &securityv1beta1.AuthorizationPolicy{}
	if err := protojson.Unmarshal([]byte(spec), s); err != nil {
		t.Fatalf("spec: %v", err)
	}
	return Policy{Name: "p", Namespace: "foo", Spec: s}
}

// rbacOf unpacks the one RBAC filter in fs.
func rbacOf(t *testing.T, fs []*hcmv3.HttpFilter) *rbachttpv3.RBAC {
	t.Helper()
	if len(fs) != 1 {
		t.Fatalf("%d filters, want 1", len(fs))
	}
	r := &rbachttpv3.RBAC{}
	if err := fs[0].GetTypedConfig().UnmarshalTo(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func names(r *rbacv3.RBAC) []string {
	var out []string
	for n := range r.GetPolicies() {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// hasProblem reports a problem naming field whose message holds text.
func hasProblem(r Result, field, text string) bool {
	for _, p := range r.Problems {
		if p.Field == field && strings.Contains(p.Message, text) && p.Key.Name == "p" {
			return true
		}
	}
	return false
}

// principalsJSON is the rule's principals, for asserting what they match.
func principalsJSON(t *testing.T, p *rbacv3.Policy) string {
	t.Helper()
	var b strings.Builder
	for _, pr := range p.GetPrincipals() {
		js, err := protojson.Marshal(pr)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(js)
	}
	return b.String()
}

// TestFailClosed goes through each kind of value that cannot be
// translated, for ALLOW and for DENY: an ALLOW rule holding one is left
// out (allows nothing) while the policy's other rules stay; a DENY rule
// loses only that value or condition (denies more); each is reported with
// the policy and field.
func TestFailClosed(t *testing.T) {
	cases := []struct {
		name string
		// rule is rule[0] of the policy; rule[1] is always a good one.
		rule  string
		field string
		text  string
		// denyMatches is what rule[0] of the DENY policy still checks,
		// as a substring of its principals ("" = matches any principal).
		denyMatches string
	}{
		{
			name:  "malformed CIDR in ipBlocks",
			rule:  `{"from":[{"source":{"ipBlocks":["10.0.0.0/8","10.0.0.0/33"]}}]}`,
			field: "spec.rules[0].from[0].source.ipBlocks[1]", text: "bad CIDR range", denyMatches: `"addressPrefix":"10.0.0.0"`,
		},
		{
			name:  "malformed address in remoteIpBlocks, the only value",
			rule:  `{"from":[{"source":{"remoteIpBlocks":["300.1.2.3"]}}]}`,
			field: "spec.rules[0].from[0].source.remoteIpBlocks[0]", text: "bad IP address",
		},
		{
			name:  "malformed CIDR in a when condition",
			rule:  `{"when":[{"key":"remote.ip","values":["1.2.3.4/99"]}]}`,
			field: "spec.rules[0].when[0].values[0]", text: "bad CIDR range",
		},
		{
			name:  "unknown when key",
			rule:  `{"when":[{"key":"source.unknown","values":["x"]}]}`,
			field: "spec.rules[0].when[0].key", text: `unknown attribute "source.unknown"`,
		},
		{
			name:  "bad port in when",
			rule:  `{"when":[{"key":"destination.port","values":["http"]}]}`,
			field: "spec.rules[0].when[0].values[0]", text: "bad port",
		},
		{
			name:  "request header key without brackets",
			rule:  `{"when":[{"key":"request.headers","values":["x"]}]}`,
			field: "spec.rules[0].when[0].values[0]", text: "expecting format [<NAME>]",
		},
		{
			name:  "request header name Envoy refuses",
			rule:  `{"when":[{"key":"request.headers[bad name\n]","values":["x"]}]}`,
			field: "spec.rules[0].when[0].values[0]", text: "cannot be expressed in Envoy",
		},
		{
			name:  "claim key with an empty name",
			rule:  `{"when":[{"key":"request.auth.claims[]","values":["x"]}]}`,
			field: "spec.rules[0].when[0].values", text: "bad key",
		},
		{
			name:  "invalid path template",
			rule:  `{"to":[{"operation":{"paths":["/{**}/a/{*}"]}}]}`,
			field: "spec.rules[0].to[0].operation.paths[0]", text: "invalid path template",
		},
		{
			name:  "service account whose regex Envoy refuses for its size",
			rule:  `{"from":[{"source":{"serviceAccounts":["my-namespace-for-the-team/my-service-account-name"]}}]}`,
			field: "spec.rules[0].from[0].source.serviceAccounts[0]", text: "RE2 program size",
		},
		{
			name:  "malformed experimental key",
			rule:  `{"when":[{"key":"experimental.envoy.filters.x","values":["v"]}]}`,
			field: "spec.rules[0].when[0].values", text: "bad key",
		},
	}
	good := `{"from":[{"source":{"principals":["cluster.local/ns/foo/sa/good"]}}]}`
	for _, c := range cases {
		t.Run(c.name+"/ALLOW", func(t *testing.T) {
			r := Build(Input{Policies: []Policy{policy(t, `{"action":"ALLOW","rules":[`+c.rule+`,`+good+`]}`)}, Proxy: gateway})
			rbac := rbacOf(t, r.HTTPFilters)
			if rbac.GetRules().GetAction() != rbacv3.RBAC_ALLOW {
				t.Fatalf("action %v", rbac.GetRules().GetAction())
			}
			if got, want := names(rbac.GetRules()), []string{"ns[foo]-policy[p]-rule[1]"}; !slices.Equal(got, want) {
				t.Errorf("rules %v, want %v: the bad rule must allow nothing", got, want)
			}
			if !hasProblem(r, c.field, c.text) || !hasProblem(r, c.field, "allows nothing") {
				t.Errorf("problems %v, want %s: %q (allows nothing)", r.Problems, c.field, c.text)
			}
		})
		t.Run(c.name+"/DENY", func(t *testing.T) {
			r := Build(Input{Policies: []Policy{policy(t, `{"action":"DENY","rules":[`+c.rule+`,`+good+`]}`)}, Proxy: gateway})
			rbac := rbacOf(t, r.HTTPFilters)
			if got, want := names(rbac.GetRules()), []string{"ns[foo]-policy[p]-rule[0]", "ns[foo]-policy[p]-rule[1]"}; !slices.Equal(got, want) {
				t.Fatalf("rules %v, want %v: the bad rule must still deny", got, want)
			}
			p := rbac.GetRules().GetPolicies()["ns[foo]-policy[p]-rule[0]"]
			pj := principalsJSON(t, p)
			if c.denyMatches != "" {
				if !strings.Contains(pj, c.denyMatches) {
					t.Errorf("principals %s, want the good values kept (%s)", pj, c.denyMatches)
				}
			} else if pj != `{"andIds":{"ids":[{"any":true}]}}` && !strings.Contains(c.rule, `"to"`) {
				t.Errorf("principals %s, want any: the bad condition left out denies more", pj)
			}
			if strings.Contains(c.rule, `"to"`) {
				perm, _ := protojson.Marshal(p.GetPermissions()[0])
				if string(perm) != `{"andRules":{"rules":[{"any":true}]}}` {
					t.Errorf("permissions %s, want any: the bad path left out denies more", perm)
				}
			}
			if !hasProblem(r, c.field, c.text) || !hasProblem(r, c.field, "denies more") {
				t.Errorf("problems %v, want %s: %q (denies more)", r.Problems, c.field, c.text)
			}
		})
	}
}

// TestFailClosedPolicies covers the cases that concern a whole policy.
func TestFailClosedPolicies(t *testing.T) {
	t.Run("ALLOW policy whose every rule is bad allows nothing", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{"rules":[{"from":[{"source":{"ipBlocks":["x"]}}]}]}`)}, Proxy: gateway})
		rbac := rbacOf(t, r.HTTPFilters)
		// An enforcing ALLOW RBAC with no policies denies every request.
		if rbac.GetRules() == nil || rbac.GetRules().GetAction() != rbacv3.RBAC_ALLOW || len(rbac.GetRules().GetPolicies()) != 0 {
			t.Errorf("rules %v, want ALLOW with no policies", rbac.GetRules())
		}
	})
	t.Run("ALLOW policy without rules allows nothing", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{}`)}, Proxy: gateway})
		p := rbacOf(t, r.HTTPFilters).GetRules().GetPolicies()["ns[foo]-policy[p]-rule[0]"]
		if !proto.Equal(p, matchNever()) {
			t.Errorf("policy %v, want istiod's match-never", p)
		}
	})
	t.Run("ALLOW rule with an HTTP-only field allows nothing on TCP", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{"rules":[{"to":[{"operation":{"paths":["/a"]}}]}]}`)}, Proxy: gateway, TCP: true})
		tcp := &rbactcpv3.RBAC{}
		if len(r.TCPFilters) != 1 || r.TCPFilters[0].GetTypedConfig().UnmarshalTo(tcp) != nil {
			t.Fatalf("tcp filters %v", r.TCPFilters)
		}
		if len(tcp.GetRules().GetPolicies()) != 0 || tcp.GetRules().GetAction() != rbacv3.RBAC_ALLOW {
			t.Errorf("tcp rules %v, want ALLOW with no policies", tcp.GetRules())
		}
		if !hasProblem(r, "spec.rules[0].to[0].operation.paths", "HTTP only") || !r.Problems[0].Warning {
			t.Errorf("problems %v, want a warning on paths", r.Problems)
		}
	})
	t.Run("DENY rule with an HTTP-only field denies all on TCP", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{"action":"DENY","rules":[{"to":[{"operation":{"paths":["/a"]}}]}]}`)}, Proxy: gateway, TCP: true})
		tcp := &rbactcpv3.RBAC{}
		if err := r.TCPFilters[0].GetTypedConfig().UnmarshalTo(tcp); err != nil {
			t.Fatal(err)
		}
		p := tcp.GetRules().GetPolicies()["ns[foo]-policy[p]-rule[0]"]
		perm, _ := protojson.Marshal(p.GetPermissions()[0])
		if string(perm) != `{"andRules":{"rules":[{"any":true}]}}` {
			t.Errorf("permission %s, want any", perm)
		}
	})
	t.Run("CUSTOM with a provider the mesh config lacks denies what it matches", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{"action":"CUSTOM","provider":{"name":"opa"},"rules":[{"to":[{"operation":{"paths":["/admin"]}}]}]}`)}, Proxy: gateway})
		rbac := rbacOf(t, r.CustomHTTPFilters)
		if got := names(rbac.GetRules()); rbac.GetRules().GetAction() != rbacv3.RBAC_DENY ||
			!slices.Equal(got, []string{"istio-ext-authz-ns[foo]-policy[p]-rule[0]-deny-due-to-bad-CUSTOM-action"}) {
			t.Errorf("rules %v %v, want the CUSTOM rule as DENY", rbac.GetRules().GetAction(), got)
		}
		if !hasProblem(r, "spec.provider.name", `no extension provider is named "opa"`) {
			t.Errorf("problems %v", r.Problems)
		}
	})
	t.Run("CUSTOM without a provider denies what it matches", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{"action":"CUSTOM","rules":[{}]}`)}, Proxy: gateway})
		rbac := rbacOf(t, r.CustomHTTPFilters)
		if rbac.GetRules().GetAction() != rbacv3.RBAC_DENY || len(rbac.GetRules().GetPolicies()) != 1 {
			t.Errorf("rules %v, want one DENY", rbac.GetRules())
		}
	})
	t.Run("CUSTOM whose provider service does not exist denies what it matches", func(t *testing.T) {
		m, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte(`extensionProviders:
- name: opa
  envoyExtAuthzGrpc: {service: opa.opa.svc.cluster.local, port: 9191}
`))
		if err != nil {
			t.Fatal(err)
		}
		r := Build(Input{Mesh: m, Policies: []Policy{policy(t, `{"action":"CUSTOM","provider":{"name":"opa"},"rules":[{}]}`)}, Proxy: gateway})
		if rbac := rbacOf(t, r.CustomHTTPFilters); rbac.GetRules().GetAction() != rbacv3.RBAC_DENY {
			t.Errorf("rules %v, want DENY", rbac.GetRules())
		}
		if !hasProblem(r, "spec.provider.name", "opa.opa.svc.cluster.local") {
			t.Errorf("problems %v", r.Problems)
		}
	})
	t.Run("a dry-run value that is not a boolean enforces", func(t *testing.T) {
		p := policy(t, `{"action":"DENY","rules":[{}]}`)
		p.Annotations = map[string]string{dryRunAnnotation: "yes"}
		r := Build(Input{Policies: []Policy{p}, Proxy: gateway})
		rbac := rbacOf(t, r.HTTPFilters)
		if rbac.GetRules() == nil || rbac.GetShadowRules() != nil {
			t.Errorf("rules %v shadow %v, want enforced", rbac.GetRules(), rbac.GetShadowRules())
		}
		if !hasProblem(r, "metadata.annotations[istio.io/dry-run]", "not a boolean") {
			t.Errorf("problems %v", r.Problems)
		}
	})
	t.Run("a DENY rule with several bad values reports each", func(t *testing.T) {
		r := Build(Input{Policies: []Policy{policy(t, `{"action":"DENY","rules":[{"from":[{"source":{"ipBlocks":["a","b"],"notRemoteIpBlocks":["c"]}}]}]}`)}, Proxy: gateway})
		for _, f := range []string{"spec.rules[0].from[0].source.ipBlocks[0]", "spec.rules[0].from[0].source.ipBlocks[1]", "spec.rules[0].from[0].source.notRemoteIpBlocks[0]"} {
			if !hasProblem(r, f, "bad IP address") {
				t.Errorf("no problem for %s in %v", f, r.Problems)
			}
		}
	})
}
