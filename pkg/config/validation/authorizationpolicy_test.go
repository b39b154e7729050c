package validation_test

import (
	"fmt"
	"strings"
	"testing"

	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

type ap = security.AuthorizationPolicy

func baseAuthorizationPolicy() *ap {
	return &ap{
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"istio": "ingressgateway"}},
		Action:   security.AuthorizationPolicy_ALLOW,
		Rules: []*security.Rule{{
			From: []*security.Rule_From{
				{Source: &security.Source{RequestPrincipals: []string{"https://issuer.example.com/*"}}},
				{Source: &security.Source{IpBlocks: []string{"10.0.0.0/8", "192.168.1.1"}, NotRemoteIpBlocks: []string{"2001:db8::/32"}}},
			},
			To: []*security.Rule_To{{Operation: &security.Operation{
				Hosts: []string{"api.example.com"}, Ports: []string{"8080"}, Methods: []string{"GET"},
				Paths: []string{"/api/{*}/items/{**}", "/healthz", "*/admin"},
			}}},
			When: []*security.Condition{
				{Key: "request.auth.claims[groups]", Values: []string{"admins"}},
				{Key: "request.headers[x-team]", NotValues: []string{"blocked"}},
				{Key: "remote.ip", Values: []string{"203.0.113.0/24"}},
			},
		}},
	}
}

func rule0(mutate func(r *security.Rule)) func(*ap) {
	return func(p *ap) { mutate(p.Rules[0]) }
}

func from1(mutate func(s *security.Source)) func(*ap) {
	return func(p *ap) { mutate(p.Rules[0].From[1].Source) }
}

func op0(mutate func(o *security.Operation)) func(*ap) {
	return func(p *ap) { mutate(p.Rules[0].To[0].Operation) }
}

func when(c *security.Condition) func(*ap) {
	return func(p *ap) { p.Rules[0].When = []*security.Condition{c} }
}

func custom(p *ap) {
	p.Action = security.AuthorizationPolicy_CUSTOM
	p.ActionDetail = &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "ext-authz"}}
	p.Rules = []*security.Rule{{To: []*security.Rule_To{{Operation: &security.Operation{Paths: []string{"/admin"}}}}}}
}

// TestAuthorizationPolicy follows istiod 1.29's ValidateAuthorizationPolicy
// and pkg/config/security's value checks rule by rule (its
// TestValidateAuthorizationPolicy cases where they apply); cases marked
// "stricter" or "beyond istiod" say where Wayfinder differs.
func TestAuthorizationPolicy(t *testing.T) {
	runCases(t, schema.AuthorizationPolicy, baseAuthorizationPolicy, []testCase[ap]{
		{name: "base is valid"},
		{name: "empty spec is valid (allow nothing)", mutate: func(p *ap) { *p = ap{} }},
		{name: "allow with an empty rule", mutate: func(p *ap) { p.Rules = []*security.Rule{{}} }},
		{name: "deny with an empty rule", mutate: func(p *ap) { p.Action = security.AuthorizationPolicy_DENY; p.Rules = []*security.Rule{{}} }},
		{name: "audit", mutate: func(p *ap) { p.Action = security.AuthorizationPolicy_AUDIT }},

		// Selection.
		{name: "selector and targetRef", mutate: func(p *ap) { p.TargetRef = gatewayRef("gw") },
			want: []string{"spec"}, msg: "only one of selector, targetRef and targetRefs"},
		{name: "selector with empty key", mutate: func(p *ap) { p.Selector.MatchLabels = map[string]string{"": "x"} },
			want: []string{`spec.selector.matchLabels[""]`}, msg: "empty label key"},
		{name: "targetRefs to a GatewayClass and an HTTPRoute (beyond istiod)", mutate: func(p *ap) {
			p.Selector = nil
			p.TargetRefs = []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Name: "wayfinder"},
				{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Name: "r"}}
		}},
		{name: "targetRef to a TLSRoute", mutate: func(p *ap) {
			p.Selector = nil
			p.TargetRefs = []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "TLSRoute", Name: "t"}}
		}, want: []string{"spec.targetRefs[0]"}, msg: `"gateway.networking.k8s.io"/"TLSRoute"`},
		{name: "targetRef without name", mutate: func(p *ap) {
			p.Selector = nil
			p.TargetRef = gatewayRef("")
		}, want: []string{"spec.targetRef.name"}, msg: "name must be set"},

		// Action and provider.
		{name: "action out of the enum (stricter)", mutate: func(p *ap) { p.Action = 9 },
			want: []string{"spec.action"}, msg: "9 is not a known value"},
		{name: "custom", mutate: custom},
		{name: "custom without rules", mutate: func(p *ap) { custom(p); p.Rules = nil },
			want: []string{"spec.rules"}, msg: "CUSTOM action without rules is meaningless"},
		{name: "custom without provider", mutate: func(p *ap) { custom(p); p.ActionDetail = nil },
			want: []string{"spec.provider.name"}, msg: "provider name must not be empty"},
		{name: "custom with an empty provider name", mutate: func(p *ap) {
			custom(p)
			p.ActionDetail = &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{}}
		}, want: []string{"spec.provider.name"}, msg: "must not be empty"},
		{name: "provider with ALLOW", mutate: func(p *ap) {
			p.ActionDetail = &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "x"}}
		}, want: []string{"spec.provider"}, msg: "only with action CUSTOM, found ALLOW"},
		{name: "deny without rules", mutate: func(p *ap) { p.Action = security.AuthorizationPolicy_DENY; p.Rules = nil },
			want: []string{"spec.rules"}, msg: "DENY action without rules is meaningless"},
		{name: "custom with identities", mutate: func(p *ap) {
			custom(p)
			p.Rules[0].From = []*security.Rule_From{{Source: &security.Source{
				Namespaces: []string{"a"}, NotNamespaces: []string{"b"}, Principals: []string{"c"}, NotPrincipals: []string{"d"},
				RequestPrincipals: []string{"e"}, NotRequestPrincipals: []string{"f"}, TrustDomains: []string{"g"},
				NotTrustDomains: []string{"h"}, IpBlocks: []string{"10.0.0.1"},
			}}}
		}, want: []string{
			"spec.rules[0].from[0].source.namespaces", "spec.rules[0].from[0].source.notNamespaces",
			"spec.rules[0].from[0].source.trustDomains", "spec.rules[0].from[0].source.notTrustDomains",
			"spec.rules[0].from[0].source.principals", "spec.rules[0].from[0].source.notPrincipals",
			"spec.rules[0].from[0].source.requestPrincipals", "spec.rules[0].from[0].source.notRequestPrincipals",
		}, msg: "namespaces is not supported with action CUSTOM"},
		{name: "custom with service accounts", mutate: func(p *ap) {
			custom(p)
			p.Rules[0].From = []*security.Rule_From{{Source: &security.Source{ServiceAccounts: []string{"ns/sa"}, NotServiceAccounts: []string{"sa"}}}}
		}, want: []string{"spec.rules[0].from[0].source.serviceAccounts", "spec.rules[0].from[0].source.notServiceAccounts"}, msg: "not supported with action CUSTOM"},
		{name: "custom with identity conditions", mutate: func(p *ap) {
			custom(p)
			p.Rules[0].When = []*security.Condition{
				{Key: "source.namespace", Values: []string{"a"}}, {Key: "source.principal", Values: []string{"a"}},
				{Key: "source.serviceAccount", Values: []string{"a"}}, {Key: "source.trustDomain", Values: []string{"a"}},
				{Key: "request.auth.claims[iss]", Values: []string{"a"}}, {Key: "request.headers[x]", Values: []string{"a"}},
			}
		}, want: []string{"spec.rules[0].when[0].key", "spec.rules[0].when[1].key", "spec.rules[0].when[2].key",
			"spec.rules[0].when[3].key", "spec.rules[0].when[4].key"}, msg: "source.namespace is not supported with action CUSTOM"},

		// Rules.
		{name: "null rule", mutate: func(p *ap) { p.Rules = append(p.Rules, nil) },
			want: []string{"spec.rules[1]"}, msg: "rule must not be null"},
		{name: "empty from", mutate: rule0(func(r *security.Rule) { r.From = []*security.Rule_From{} }),
			want: []string{"spec.rules[0].from"}, msg: "from must not be empty"},
		{name: "null from", mutate: rule0(func(r *security.Rule) { r.From = append(r.From, nil) }),
			want: []string{"spec.rules[0].from[2]"}, msg: "from must not be null"},
		{name: "from without source", mutate: rule0(func(r *security.Rule) { r.From = append(r.From, &security.Rule_From{}) }),
			want: []string{"spec.rules[0].from[2].source"}, msg: "source must be set"},
		{name: "empty source", mutate: rule0(func(r *security.Rule) { r.From[0].Source = &security.Source{} }),
			want: []string{"spec.rules[0].from[0].source"}, msg: "source must not be empty"},
		{name: "service accounts with namespaces", mutate: from1(func(s *security.Source) {
			s.ServiceAccounts = []string{"ns/sa"}
			s.Namespaces = []string{"ns"}
		}), want: []string{"spec.rules[0].from[1].source"}, msg: "serviceAccounts cannot be set with namespaces or principals"},
		{name: "service accounts with principals", mutate: from1(func(s *security.Source) {
			s.NotServiceAccounts = []string{"sa"}
			s.Principals = []string{"cluster.local/ns/a/sa/b"}
		}), want: []string{"spec.rules[0].from[1].source"}, msg: "serviceAccounts cannot be set"},
		{name: "bad CIDR and addresses", mutate: from1(func(s *security.Source) {
			s.IpBlocks = []string{"10.0.0.0/8", "10.0.0.0/33", "300.1.1.1"}
			s.NotIpBlocks = []string{"1.2.3.4/x"}
			s.RemoteIpBlocks = []string{"fe80::1%eth0"}
			s.NotRemoteIpBlocks = []string{"abc"}
		}), want: []string{"spec.rules[0].from[1].source.ipBlocks[1]", "spec.rules[0].from[1].source.ipBlocks[2]",
			"spec.rules[0].from[1].source.notIpBlocks[0]", "spec.rules[0].from[1].source.remoteIpBlocks[0]",
			"spec.rules[0].from[1].source.notRemoteIpBlocks[0]"}, msg: `bad CIDR range: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`},
		{name: "IPv6 and host bits in a CIDR are accepted", mutate: from1(func(s *security.Source) {
			s.IpBlocks = []string{"2001:db8::1", "10.1.2.3/8", "::/0"}
		})},
		{name: "empty source values", mutate: from1(func(s *security.Source) {
			s.Principals = []string{""}
			s.NotPrincipals = []string{"a", ""}
			s.RequestPrincipals = []string{""}
			s.NotRequestPrincipals = []string{""}
			s.Namespaces = []string{""}
			s.NotNamespaces = []string{""}
			s.IpBlocks = []string{""}
		}), want: []string{"spec.rules[0].from[1].source.principals[0]", "spec.rules[0].from[1].source.notPrincipals[1]",
			"spec.rules[0].from[1].source.requestPrincipals[0]", "spec.rules[0].from[1].source.notRequestPrincipals[0]",
			"spec.rules[0].from[1].source.namespaces[0]", "spec.rules[0].from[1].source.notNamespaces[0]",
			"spec.rules[0].from[1].source.ipBlocks[0]"}, msg: "value must not be empty"},
		{name: "service accounts", mutate: from1(func(s *security.Source) {
			s.ServiceAccounts = []string{"ns/sa", "sa", "a/b/c", "ns/*", "/sa", "ns/", strings.Repeat("x", 321)}
		}), want: []string{"spec.rules[0].from[1].source.serviceAccounts[2]", "spec.rules[0].from[1].source.serviceAccounts[3]",
			"spec.rules[0].from[1].source.serviceAccounts[4]", "spec.rules[0].from[1].source.serviceAccounts[5]",
			"spec.rules[0].from[1].source.serviceAccounts[6]"}, msg: "expected format 'serviceAccount' or 'namespace/serviceAccount'"},
		{name: "more than 16 service accounts", mutate: from1(func(s *security.Source) {
			for i := range 17 {
				s.NotServiceAccounts = append(s.NotServiceAccounts, fmt.Sprintf("ns/sa%d", i))
			}
		}), want: []string{"spec.rules[0].from[1].source.notServiceAccounts"}, msg: "may not have more than 16 values, has 17"},
		{name: "trust domains", mutate: from1(func(s *security.Source) {
			s.TrustDomains = []string{"cluster.local", "*.local", "td-*", "*", "a*b", "*a*", "td/x"}
			s.NotTrustDomains = []string{""}
		}), want: []string{"spec.rules[0].from[1].source.trustDomains[4]", "spec.rules[0].from[1].source.trustDomains[5]",
			"spec.rules[0].from[1].source.trustDomains[6]", "spec.rules[0].from[1].source.notTrustDomains[0]"},
			msg: "wildcard is only allowed at the start or end"},

		{name: "empty to", mutate: rule0(func(r *security.Rule) { r.To = []*security.Rule_To{} }),
			want: []string{"spec.rules[0].to"}, msg: "to must not be empty"},
		{name: "null to", mutate: rule0(func(r *security.Rule) { r.To = []*security.Rule_To{nil} }),
			want: []string{"spec.rules[0].to[0]"}, msg: "to must not be null"},
		{name: "to without operation", mutate: rule0(func(r *security.Rule) { r.To = []*security.Rule_To{{}} }),
			want: []string{"spec.rules[0].to[0].operation"}, msg: "operation must be set"},
		{name: "empty operation", mutate: op0(func(o *security.Operation) { *o = security.Operation{} }),
			want: []string{"spec.rules[0].to[0].operation"}, msg: "operation must not be empty"},
		{name: "bad ports", mutate: op0(func(o *security.Operation) {
			o.Ports = []string{"0", "65535", "65536", "http", "-1"}
			o.NotPorts = []string{" 80"}
		}), want: []string{"spec.rules[0].to[0].operation.ports[2]", "spec.rules[0].to[0].operation.ports[3]",
			"spec.rules[0].to[0].operation.ports[4]", "spec.rules[0].to[0].operation.notPorts[0]"}, msg: "bad port 65536"},
		{name: "empty operation values", mutate: op0(func(o *security.Operation) {
			o.Hosts = []string{""}
			o.NotHosts = []string{""}
			o.Methods = []string{""}
			o.NotMethods = []string{""}
			o.Paths = []string{""}
			o.NotPaths = []string{""}
			o.Ports = []string{""}
			o.NotPorts = []string{""}
		}), want: []string{"spec.rules[0].to[0].operation.hosts[0]", "spec.rules[0].to[0].operation.notHosts[0]",
			"spec.rules[0].to[0].operation.ports[0]", "spec.rules[0].to[0].operation.notPorts[0]",
			"spec.rules[0].to[0].operation.methods[0]", "spec.rules[0].to[0].operation.notMethods[0]",
			"spec.rules[0].to[0].operation.paths[0]", "spec.rules[0].to[0].operation.notPaths[0]"}, msg: "value must not be empty"},
		{name: "path templates istiod accepts", mutate: op0(func(o *security.Operation) {
			// A literal after {**} is accepted: only another operator may
			// not follow it.
			o.Paths = []string{"/{*}", "/{**}", "/a/{*}/b/{**}", "/{*}/{*}/c", "/{**}/a"}
			o.NotPaths = []string{"/api/{**}", "/ui/*", "/a%20b/{*}", "*.txt"}
		})},
		{name: "path templates istiod refuses", mutate: op0(func(o *security.Operation) {
			o.Paths = []string{"/a/{*}.txt", "/{**}/{*}", "/{foo}", "/a}/b", "/{*}/a b"}
			o.NotPaths = []string{"/{**}/{**}"}
		}), want: []string{"spec.rules[0].to[0].operation.paths[0]", "spec.rules[0].to[0].operation.paths[1]",
			"spec.rules[0].to[0].operation.paths[2]", "spec.rules[0].to[0].operation.paths[3]",
			"spec.rules[0].to[0].operation.paths[4]", "spec.rules[0].to[0].operation.notPaths[0]"}, msg: "beyond a supported path template"},

		// Conditions.
		{name: "every key istiod accepts", mutate: func(p *ap) {
			p.Rules[0].When = []*security.Condition{
				{Key: "request.headers[User-Agent]", Values: []string{"curl/*"}},
				{Key: "source.ip", Values: []string{"10.0.0.1", "10.0.0.0/16"}},
				{Key: "remote.ip", NotValues: []string{"2001:db8::/32"}},
				{Key: "source.namespace", Values: []string{"default"}},
				{Key: "source.principal", Values: []string{"cluster.local/ns/a/sa/b"}},
				{Key: "source.serviceAccount", Values: []string{"default/productpage"}},
				{Key: "source.trustDomain", Values: []string{"*.local"}},
				{Key: "request.auth.principal", Values: []string{"iss/sub"}},
				{Key: "request.auth.audiences", Values: []string{"api"}},
				{Key: "request.auth.presenter", Values: []string{"app"}},
				{Key: "request.auth.claims[iss]", Values: []string{"https://issuer"}},
				{Key: "request.auth.claims[nested][key]", Values: []string{"v"}},
				{Key: "destination.ip", Values: []string{"10.0.0.2"}},
				{Key: "destination.port", Values: []string{"443"}},
				{Key: "connection.sni", Values: []string{"www.example.com"}},
				{Key: "experimental.envoy.filters.network.mysql_proxy[db.table]", Values: []string{"[update]"}},
			}
		}},
		{name: "null condition", mutate: when(nil), want: []string{"spec.rules[0].when[0]"}, msg: "condition must not be null"},
		{name: "condition without key", mutate: when(&security.Condition{Values: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "key must not be empty"},
		{name: "condition without values", mutate: when(&security.Condition{Key: "source.ip"}),
			want: []string{"spec.rules[0].when[0]"}, msg: "at least one of values or notValues must be set for key source.ip"},
		{name: "unknown attribute", mutate: when(&security.Condition{Key: "request.method", Values: []string{"GET"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "unknown attribute: request.method"},
		{name: "header key without brackets", mutate: when(&security.Condition{Key: "request.headers", Values: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "should have format a[b]"},
		{name: "claim key with empty name", mutate: when(&security.Condition{Key: "request.auth.claims[]", Values: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "bad key request.auth.claims[]"},
		{name: "destination.namespace is replaced", mutate: when(&security.Condition{Key: "destination.namespace", Values: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "replaced by the metadata.namespace"},
		{name: "destination.labels is replaced", mutate: when(&security.Condition{Key: "destination.labels[app]", Values: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "replaced by the workload selector"},
		{name: "destination.name is deprecated", mutate: when(&security.Condition{Key: "destination.name", Values: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "only supported in v1alpha1"},
		{name: "destination.user is deprecated", mutate: when(&security.Condition{Key: "destination.user", NotValues: []string{"a"}}),
			want: []string{"spec.rules[0].when[0].key"}, msg: "deprecated attribute destination.user"},
		{name: "bad ip values", mutate: when(&security.Condition{Key: "source.ip", Values: []string{"10.0.0.1", "1.2.3"}, NotValues: []string{"10.0.0.0/40"}}),
			want: []string{"spec.rules[0].when[0].values[1]", "spec.rules[0].when[0].notValues[0]"}, msg: "bad IP address 1.2.3"},
		{name: "bad remote.ip and destination.ip", mutate: func(p *ap) {
			p.Rules[0].When = []*security.Condition{{Key: "remote.ip", Values: []string{"x"}}, {Key: "destination.ip", NotValues: []string{"y/8"}}}
		}, want: []string{"spec.rules[0].when[0].values[0]", "spec.rules[0].when[1].notValues[0]"}, msg: "bad IP address x"},
		{name: "bad destination.port", mutate: when(&security.Condition{Key: "destination.port", Values: []string{"80", "99999"}}),
			want: []string{"spec.rules[0].when[0].values[1]"}, msg: "bad port 99999"},
		{name: "bad source.serviceAccount", mutate: when(&security.Condition{Key: "source.serviceAccount", Values: []string{"a/b/c"}}),
			want: []string{"spec.rules[0].when[0].values[0]"}, msg: "expected format"},
		{name: "more than 16 source.serviceAccount values", mutate: func(p *ap) {
			c := &security.Condition{Key: "source.serviceAccount"}
			for i := range 17 {
				c.NotValues = append(c.NotValues, fmt.Sprintf("sa%d", i))
			}
			p.Rules[0].When = []*security.Condition{c}
		}, want: []string{"spec.rules[0].when[0].notValues"}, msg: "may not have more than 16 values"},
		{name: "bad source.trustDomain", mutate: when(&security.Condition{Key: "source.trustDomain", NotValues: []string{"**"}}),
			want: []string{"spec.rules[0].when[0].notValues[0]"}, msg: "at most one wildcard"},
		{name: "empty condition value", mutate: when(&security.Condition{Key: "request.headers[x]", Values: []string{""}, NotValues: []string{""}}),
			want: []string{"spec.rules[0].when[0].values[0]", "spec.rules[0].when[0].notValues[0]"}, msg: "value must not be empty"},

		{name: "problems in several rules", mutate: func(p *ap) {
			p.Rules = append(p.Rules, &security.Rule{From: []*security.Rule_From{{Source: &security.Source{RemoteIpBlocks: []string{"1.1.1.1/40"}}}}})
			p.Rules[0].To[0].Operation.Ports = []string{"x"}
		}, want: []string{"spec.rules[0].to[0].operation.ports[0]", "spec.rules[1].from[0].source.remoteIpBlocks[0]"}, msg: "bad port x"},
	})
}

// TestAuthorizationPolicyDryRun is istiod's checkDryRunAnnotation: a
// boolean on ALLOW and DENY, refused on AUDIT and CUSTOM.
func TestAuthorizationPolicyDryRun(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		action      security.AuthorizationPolicy_Action
		want        string
	}{
		{"allow true", "true", security.AuthorizationPolicy_ALLOW, ""},
		{"deny false", "false", security.AuthorizationPolicy_DENY, ""},
		{"deny 1", "1", security.AuthorizationPolicy_DENY, ""},
		{"allow yes", "yes", security.AuthorizationPolicy_ALLOW, `invalid value "yes": want true or false`},
		{"allow empty", "", security.AuthorizationPolicy_ALLOW, `invalid value ""`},
		{"audit", "true", security.AuthorizationPolicy_AUDIT, "istio.io/dry-run supports only action ALLOW and DENY, found AUDIT"},
		{"custom", "true", security.AuthorizationPolicy_CUSTOM, "istio.io/dry-run supports only action ALLOW and DENY, found CUSTOM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseAuthorizationPolicy()
			if tc.action == security.AuthorizationPolicy_CUSTOM {
				custom(spec)
			}
			spec.Action = tc.action
			c := config.Config{Meta: config.Meta{Kind: schema.AuthorizationPolicy, Name: "p", Namespace: "edge",
				Annotations: map[string]string{"istio.io/dry-run": tc.value}}, Spec: spec}
			err := validation.Validate(c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `metadata.annotations["istio.io/dry-run"]: `+tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}
