package authn

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"sort"
	"strings"
	"testing"
	"time"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	securityv1beta1 "istio.io/api/security/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from Build and delete goldens whose input is gone")

// caseInput is the YAML of one golden case.
type caseInput struct {
	RootNamespace string `json:"rootNamespace"`
	Proxy         struct {
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		GatewayName string            `json:"gatewayName"`
	} `json:"proxy"`
	// JWKS is what the fake resolver answers: by jwksUri, or by
	// "issuer:ISSUER" for discovery; anything else fails.
	JWKS map[string]string `json:"jwks"`
	// NoResolver builds without a resolver.
	NoResolver bool `json:"noResolver"`
	Routes     []struct {
		Kind      policyattach.RouteKind `json:"kind"`
		Namespace string                 `json:"namespace"`
		Name      string                 `json:"name"`
	} `json:"routes"`
	// Policies are RequestAuthentications; created is RFC 3339.
	Policies []struct {
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Created   string          `json:"created"`
		Spec      json.RawMessage `json:"spec"`
	} `json:"policies"`
}

// fakeResolver answers from a map, as a JWKS server would.
type fakeResolver map[string]string

func (f fakeResolver) JWKS(issuer, uri string, _ time.Duration) (string, error) {
	k := uri
	if k == "" {
		k = "issuer:" + issuer
	}
	if v, ok := f[k]; ok {
		return v, nil
	}
	return "", errors.New("connection refused")
}

func parseCase(t *testing.T, file string, data []byte) Input {
	t.Helper()
	var c caseInput
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	in := Input{
		RootNamespace: c.RootNamespace,
		Proxy:         policyattach.Proxy{Namespace: c.Proxy.Namespace, Labels: c.Proxy.Labels, GatewayName: c.Proxy.GatewayName},
	}
	if !c.NoResolver {
		in.JWKS = fakeResolver(c.JWKS)
	}
	for _, r := range c.Routes {
		in.Routes = append(in.Routes, policyattach.RouteRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	for i, p := range c.Policies {
		spec := &securityv1beta1.RequestAuthentication{}
		if len(p.Spec) > 0 {
			if err := protojson.Unmarshal(p.Spec, spec); err != nil {
				t.Fatalf("policies[%d].spec: %v", i, err)
			}
		}
		created := time.Time{}
		if p.Created != "" {
			var err error
			if created, err = time.Parse(time.RFC3339, p.Created); err != nil {
				t.Fatalf("policies[%d].created: %v", i, err)
			}
		}
		in.Policies = append(in.Policies, RequestAuthentication{Name: p.Name, Namespace: p.Namespace, CreationTime: created, Spec: spec})
	}
	return in
}

// TestGolden builds each testdata/*.in.yaml and records the filters, the
// route requirements, the applied policies and the problems; each input's
// leading comment (copied into its golden) names the istiod function or
// test the case follows.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		in := parseCase(t, file, data)
		r := Build(in)
		checkValid(t, r)
		// Deterministic: a second build gives the same bytes.
		if again := Build(in); !sameFilters(t, r.Filters, again.Filters) {
			t.Error("two builds of the same input differ")
		}
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			b.WriteString(line)
		}
		golden.Section(t, &b, "filters", r.Filters)
		routes := []string{}
		for ref, name := range r.RouteRequirements {
			routes = append(routes, ref.String()+" -> "+name)
		}
		sort.Strings(routes)
		golden.WriteYAML(t, &b, "routeRequirements", routes)
		applied := []string{}
		for _, k := range r.Applied {
			applied = append(applied, k.String())
		}
		golden.WriteYAML(t, &b, "applied", applied)
		problems := []string{}
		for _, e := range r.Problems {
			sev := "error"
			if e.Warning {
				sev = "warning"
			}
			problems = append(problems, sev+": "+e.Error())
		}
		golden.WriteYAML(t, &b, "problems", problems)
		return b.Bytes()
	})
}

func sameFilters(t *testing.T, a, b []*hcmv3.HttpFilter) bool {
	t.Helper()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].GetTypedConfig().GetValue(), b[i].GetTypedConfig().GetValue()) {
			return false
		}
	}
	return true
}

// checkValid runs ValidateAll on every generated proto, the HttpFilter
// and the jwt_authn config packed inside it.
func checkValid(t *testing.T, r Result) {
	t.Helper()
	for _, f := range r.Filters {
		if err := f.ValidateAll(); err != nil {
			t.Errorf("filter %s: %v", f.GetName(), err)
		}
		cfg := &jwtv3.JwtAuthentication{}
		if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
			t.Fatalf("filter %s: %v", f.GetName(), err)
		}
		if err := cfg.ValidateAll(); err != nil {
			t.Errorf("filter %s config: %v", f.GetName(), err)
		}
		// Every provider a requirement names exists.
		for _, name := range requiredProviders(cfg) {
			if _, ok := cfg.Providers[name]; !ok {
				t.Errorf("requirement names provider %q, which the filter does not have", name)
			}
		}
	}
	for ref, name := range r.RouteRequirements {
		a, err := PerRouteConfig(name)
		if err != nil {
			t.Errorf("%s: per-route config: %v", ref, err)
		}
		_ = a
	}
}

func requiredProviders(cfg *jwtv3.JwtAuthentication) []string {
	var out []string
	var walk func(*jwtv3.JwtRequirement)
	walk = func(r *jwtv3.JwtRequirement) {
		switch x := r.GetRequiresType().(type) {
		case *jwtv3.JwtRequirement_ProviderName:
			out = append(out, x.ProviderName)
		case *jwtv3.JwtRequirement_RequiresAny:
			for _, s := range x.RequiresAny.GetRequirements() {
				walk(s)
			}
		case *jwtv3.JwtRequirement_RequiresAll:
			for _, s := range x.RequiresAll.GetRequirements() {
				walk(s)
			}
		}
	}
	for _, rule := range cfg.GetRules() {
		walk(rule.GetRequires())
	}
	for _, r := range cfg.GetRequirementMap() {
		walk(r)
	}
	return out
}
