package authz

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	securityv1beta1 "istio.io/api/security/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from Build and delete goldens whose input is gone")

// caseInput is the YAML of one golden case.
type caseInput struct {
	// Mesh is MeshConfig YAML, as a mesh config file holds it.
	Mesh          string `json:"mesh"`
	RootNamespace string `json:"rootNamespace"`
	TCP           bool   `json:"tcp"`
	TrustedHops   bool   `json:"trustedHops"`
	Proxy         struct {
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		GatewayName string            `json:"gatewayName"`
	} `json:"proxy"`
	// Clusters maps "SERVICE:PORT", as a provider writes them, to the
	// cluster name; any other service does not exist.
	Clusters map[string]string `json:"clusters"`
	// Routes are the route objects the gateway serves.
	Routes []policyattach.RouteRef `json:"routes"`
	// Policies are AuthorizationPolicy objects as kubectl shows them;
	// objects without creationTimestamp are created in list order.
	Policies []struct {
		Metadata struct {
			Name              string            `json:"name"`
			Namespace         string            `json:"namespace"`
			Annotations       map[string]string `json:"annotations"`
			CreationTimestamp string            `json:"creationTimestamp"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	} `json:"policies"`
}

func parseCase(t *testing.T, file string, data []byte) Input {
	t.Helper()
	var c caseInput
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cfg, err := mesh.Parse(mesh.FileSource(file+"#mesh"), []byte(c.Mesh))
	if err != nil {
		t.Fatalf("mesh config: %v", err)
	}
	in := Input{
		Mesh: cfg, RootNamespace: c.RootNamespace, TCP: c.TCP, TrustedHops: c.TrustedHops,
		Proxy:  policyattach.Proxy{Namespace: c.Proxy.Namespace, Labels: c.Proxy.Labels, GatewayName: c.Proxy.GatewayName},
		Routes: c.Routes,
	}
	if c.Clusters != nil {
		in.Clusters = func(service string, port uint32) (string, error) {
			if name, ok := c.Clusters[fmt.Sprintf("%s:%d", service, port)]; ok {
				return name, nil
			}
			return "", fmt.Errorf("could not find service %s in the service registry", service)
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range c.Policies {
		spec := &securityv1beta1.AuthorizationPolicy{}
		if len(p.Spec) > 0 {
			if err := protojson.Unmarshal(p.Spec, spec); err != nil {
				t.Fatalf("policies[%d].spec: %v", i, err)
			}
		}
		created := base.Add(time.Duration(i) * time.Second)
		if ts := p.Metadata.CreationTimestamp; ts != "" {
			if created, err = time.Parse(time.RFC3339, ts); err != nil {
				t.Fatalf("policies[%d].metadata.creationTimestamp: %v", i, err)
			}
		}
		in.Policies = append(in.Policies, Policy{
			Name: p.Metadata.Name, Namespace: p.Metadata.Namespace, Annotations: p.Metadata.Annotations,
			CreationTime: created, Spec: spec,
		})
	}
	return in
}

// TestGolden builds each testdata/*.in.yaml; each input's leading comment
// (copied into its golden) names the istiod test and testdata it follows.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		r := Build(parseCase(t, file, data))
		checkResult(t, r)
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			b.WriteString(line)
		}
		applied := []string{}
		for _, k := range r.Applied {
			applied = append(applied, k.String())
		}
		golden.WriteYAML(t, &b, "applied", applied)
		problems := []string{}
		for _, p := range r.Problems {
			s := p.Error()
			if p.Warning {
				s = "warning: " + s
			}
			problems = append(problems, s)
		}
		golden.WriteYAML(t, &b, "problems", problems)
		golden.Section(t, &b, "customHttpFilters", r.CustomHTTPFilters)
		golden.Section(t, &b, "httpFilters", r.HTTPFilters)
		golden.Section(t, &b, "customTcpFilters", r.CustomTCPFilters)
		golden.Section(t, &b, "tcpFilters", r.TCPFilters)
		golden.WriteYAML(t, &b, "routeConfigs", routeConfigs(t, r))
		return b.Bytes()
	})
}

// checkResult fails the test for any filter that does not validate, or
// whose typed config does not (an Any is not checked by its holder).
func checkResult(t *testing.T, r Result) {
	t.Helper()
	for _, f := range append(append([]*hcmFilter{}, wrapHTTP(r.CustomHTTPFilters)...), wrapHTTP(r.HTTPFilters)...) {
		checkFilter(t, f.name, f.validate, f.config)
	}
	for _, f := range append(append([]*listenerv3.Filter{}, r.CustomTCPFilters...), r.TCPFilters...) {
		checkFilter(t, f.GetName(), f.ValidateAll, f.GetTypedConfig())
	}
}

// routeConfigs lists Result.RouteConfigs by route and filter name, each
// config validated and in its protojson form.
func routeConfigs(t *testing.T, r Result) []map[string]any {
	t.Helper()
	routes := slices.SortedFunc(maps.Keys(r.RouteConfigs), func(a, b policyattach.RouteRef) int { return strings.Compare(a.String(), b.String()) })
	out := []map[string]any{}
	for _, rt := range routes {
		for _, name := range slices.Sorted(maps.Keys(r.RouteConfigs[rt])) {
			a := r.RouteConfigs[rt][name]
			checkFilter(t, rt.String()+" "+name, func() error { return nil }, a)
			m, err := a.UnmarshalNew()
			if err != nil {
				t.Fatal(err)
			}
			js, err := protojson.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, map[string]any{"route": rt.String(), "filter": name, "config": json.RawMessage(js)})
		}
	}
	return out
}
