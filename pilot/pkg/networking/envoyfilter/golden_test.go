package envoyfilter

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/policyattach"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

const rootNamespace = "istio-system"

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from Apply and delete goldens whose input is gone")

// goldenCase is a testdata/*.in.yaml: the EnvoyFilters and proxy, and the
// translated resources (testdata/gateway.yaml unless the case has its
// own).
type goldenCase struct {
	// Namespace, Labels and GatewayName describe the gateway proxy Select
	// picks filters for (root namespace istio-system); default: a proxy in
	// istio-system labelled istio=ingressgateway.
	Namespace    string              `json:"namespace"`
	Labels       map[string]string   `json:"labels"`
	GatewayName  string              `json:"gatewayName"`
	Proxy        Proxy               `json:"proxy"`
	PortMap      map[uint32][]uint32 `json:"portMap"`
	Resources    string              `json:"resources"`
	EnvoyFilters []struct {
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Created   time.Time       `json:"created"`
		Spec      json.RawMessage `json:"spec"`
	} `json:"envoyFilters"`
	Withhold []struct {
		Filter   string `json:"filter"` // namespace/name
		Index    int    `json:"index"`
		Resource string `json:"resource"` // Type/name
	} `json:"withhold"`
}

type resources struct {
	Listeners           []json.RawMessage `json:"listeners"`
	RouteConfigurations []json.RawMessage `json:"routeConfigurations"`
	Clusters            []json.RawMessage `json:"clusters"`
}

func decodeAll[M proto.Message](t *testing.T, raws []json.RawMessage, newM func() M) []M {
	t.Helper()
	var out []M
	for _, r := range raws {
		m := newM()
		if err := protojson.Unmarshal(r, m); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		out = append(out, m)
	}
	return out
}

func loadInput(t *testing.T, data []byte) Input {
	t.Helper()
	var c goldenCase
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	resFile := c.Resources
	if resFile == "" {
		resFile = "gateway.yaml"
	}
	rdata, err := os.ReadFile(filepath.Join("testdata", resFile))
	if err != nil {
		t.Fatal(err)
	}
	var r resources
	if err := yaml.UnmarshalStrict(rdata, &r); err != nil {
		t.Fatal(err)
	}
	in := Input{
		Proxy:               c.Proxy,
		PortMap:             c.PortMap,
		Listeners:           decodeAll(t, r.Listeners, func() *listenerv3.Listener { return &listenerv3.Listener{} }),
		RouteConfigurations: decodeAll(t, r.RouteConfigurations, func() *routev3.RouteConfiguration { return &routev3.RouteConfiguration{} }),
		Clusters:            decodeAll(t, r.Clusters, func() *clusterv3.Cluster { return &clusterv3.Cluster{} }),
	}
	for _, ef := range c.EnvoyFilters {
		spec := &networking.EnvoyFilter{}
		if err := protojson.Unmarshal(ef.Spec, spec); err != nil {
			t.Fatalf("EnvoyFilter %s: %v", ef.Name, err)
		}
		in.Filters = append(in.Filters, Filter{Name: ef.Name, Namespace: ef.Namespace, Created: ef.Created, Spec: spec})
	}
	proxy := policyattach.Proxy{Namespace: c.Namespace, Labels: c.Labels, GatewayName: c.GatewayName}
	if proxy.Namespace == "" {
		proxy.Namespace = rootNamespace
	}
	if proxy.Labels == nil {
		proxy.Labels = map[string]string{"istio": "ingressgateway"}
	}
	in.Filters = Select(in.Filters, rootNamespace, proxy)
	for _, w := range c.Withhold {
		ns, name, _ := cutSlash(w.Filter)
		typ, rname, _ := cutSlash(w.Resource)
		rt := map[string]ResourceType{"Listener": Listener, "RouteConfiguration": RouteConfiguration, "Cluster": Cluster}[typ]
		if in.Withhold == nil {
			in.Withhold = map[Withheld]bool{}
		}
		in.Withhold[Withheld{Patch: PatchRef{Namespace: ns, Name: name, Index: w.Index}, Resource: ResourceRef{Type: rt, Name: rname}}] = true
	}
	return in
}

func cutSlash(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// reportYAML is a PatchReport as the goldens show it.
type reportYAML struct {
	Patch     string   `json:"patch"`
	ApplyTo   string   `json:"applyTo"`
	Operation string   `json:"operation"`
	Skipped   string   `json:"skipped,omitempty"`
	Matched   int      `json:"matched"`
	Changed   int      `json:"changed"`
	Failures  []string `json:"failures,omitempty"`
	Withheld  []string `json:"withheld,omitempty"`
}

func render(t *testing.T, in Input, res Result) []byte {
	t.Helper()
	var b bytes.Buffer
	selected := []string{}
	for _, f := range in.Filters {
		selected = append(selected, f.Namespace+"/"+f.Name)
	}
	golden.WriteYAML(t, &b, "selected", selected)
	golden.Section(t, &b, "listeners", res.Listeners)
	golden.Section(t, &b, "routeConfigurations", res.RouteConfigurations)
	golden.Section(t, &b, "clusters", res.Clusters)
	reps := []reportYAML{}
	for _, r := range res.Patches {
		ry := reportYAML{Patch: r.Patch.String(), ApplyTo: r.ApplyTo.String(), Operation: r.Operation.String(),
			Skipped: r.Skipped, Matched: r.Matched, Changed: r.Changed}
		for _, f := range r.Failures {
			ry.Failures = append(ry.Failures, f.Resource.String()+": "+f.Error)
		}
		for _, w := range r.Withheld {
			ry.Withheld = append(ry.Withheld, w.String())
		}
		reps = append(reps, ry)
	}
	golden.WriteYAML(t, &b, "patches", reps)
	touched := map[string][]string{}
	for ref, ps := range res.Touched {
		for _, p := range ps {
			touched[ref.String()] = append(touched[ref.String()], p.String())
		}
	}
	golden.WriteYAML(t, &b, "touched", touched)
	errs := []string{}
	for _, e := range res.Errors {
		errs = append(errs, e.Error())
	}
	golden.WriteYAML(t, &b, "errors", errs)
	return b.Bytes()
}

// TestGolden runs Apply over each testdata/*.in.yaml; each file's header
// names the istiod test or function whose expectations it re-expresses.
// Every served resource must validate, and the inputs must be unchanged.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", *update, func(t *testing.T, file string, data []byte) []byte {
		in := loadInput(t, data)
		before := cloneInput(in)
		res := Apply(in)
		for _, l := range res.Listeners {
			if err := validate(l); err != nil {
				t.Errorf("served listener %s does not validate: %v", l.GetName(), err)
			}
		}
		for _, rc := range res.RouteConfigurations {
			if err := validate(rc); err != nil {
				t.Errorf("served route configuration %s does not validate: %v", rc.GetName(), err)
			}
		}
		for _, c := range res.Clusters {
			if err := validate(c); err != nil {
				t.Errorf("served cluster %s does not validate: %v", c.GetName(), err)
			}
		}
		assertUnchanged(t, before, in)
		return render(t, in, res)
	})
}

func cloneInput(in Input) Input {
	out := in
	out.Listeners, out.RouteConfigurations, out.Clusters = nil, nil, nil
	for _, l := range in.Listeners {
		out.Listeners = append(out.Listeners, proto.Clone(l).(*listenerv3.Listener))
	}
	for _, rc := range in.RouteConfigurations {
		out.RouteConfigurations = append(out.RouteConfigurations, proto.Clone(rc).(*routev3.RouteConfiguration))
	}
	for _, c := range in.Clusters {
		out.Clusters = append(out.Clusters, proto.Clone(c).(*clusterv3.Cluster))
	}
	for i := range in.Filters {
		out.Filters[i].Spec = proto.Clone(in.Filters[i].Spec).(*networking.EnvoyFilter)
	}
	return out
}

func assertUnchanged(t *testing.T, before, after Input) {
	t.Helper()
	for i := range before.Listeners {
		if !proto.Equal(before.Listeners[i], after.Listeners[i]) {
			t.Errorf("input listener %s was mutated", before.Listeners[i].GetName())
		}
	}
	for i := range before.RouteConfigurations {
		if !proto.Equal(before.RouteConfigurations[i], after.RouteConfigurations[i]) {
			t.Errorf("input route configuration %s was mutated", before.RouteConfigurations[i].GetName())
		}
	}
	for i := range before.Clusters {
		if !proto.Equal(before.Clusters[i], after.Clusters[i]) {
			t.Errorf("input cluster %s was mutated", before.Clusters[i].GetName())
		}
	}
	for i := range before.Filters {
		if !proto.Equal(before.Filters[i].Spec, after.Filters[i].Spec) {
			t.Errorf("input EnvoyFilter %s was mutated", before.Filters[i].Name)
		}
	}
}
