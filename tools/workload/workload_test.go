package workload

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/blockyaml"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// load parses and validates every YAML file in dir.
func load(t *testing.T, dir string) map[string]config.Config {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]config.Config{}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".yaml" {
			t.Fatalf("unexpected file %s left in %s", e.Name(), dir)
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cfgs, errs := manifest.Parse(p, data, manifest.Options{})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", p, errs[0])
		}
		for _, c := range cfgs {
			if err := validation.Validate(c); err != nil {
				t.Fatalf("%s: %s invalid: %v", p, c.Key(), err)
			}
			out[c.Key().String()] = c
		}
	}
	return out
}

func TestWriteScenario(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Options{Services: 3}); err != nil {
		t.Fatal(err)
	}
	cfgs := load(t, dir)
	if len(cfgs) != 7 {
		t.Fatalf("got %d objects, want 1 gateway + 3 service entries + 3 virtual services", len(cfgs))
	}

	gw := cfgs["Gateway istio-system/ingressgateway"].Spec.(*networking.Gateway)
	if gw.GetSelector()["istio"] != "ingressgateway" || len(gw.GetServers()) != 1 {
		t.Fatalf("gateway: %v", gw)
	}
	srv := gw.GetServers()[0]
	if srv.GetPort().GetNumber() != 80 || srv.GetPort().GetProtocol() != "HTTP" || !slices.Equal(srv.GetHosts(), []string{"*/*"}) {
		t.Fatalf("gateway server: %v", srv)
	}

	var addrs []string
	for i := range 3 {
		se := cfgs["ServiceEntry default/svc-"+string(rune('0'+i))].Spec.(*networking.ServiceEntry)
		if !slices.Equal(se.GetHosts(), []string{ServiceHost(i)}) || se.GetLocation() != networking.ServiceEntry_MESH_INTERNAL ||
			se.GetResolution() != networking.ServiceEntry_STATIC {
			t.Fatalf("service entry %d: %v", i, se)
		}
		if p := se.GetPorts(); len(p) != 1 || p[0].GetNumber() != 8080 || p[0].GetName() != "http" || p[0].GetProtocol() != "HTTP" {
			t.Fatalf("service entry %d ports: %v", i, p)
		}
		if len(se.GetEndpoints()) != DefaultEndpoints {
			t.Fatalf("service entry %d has %d endpoints", i, len(se.GetEndpoints()))
		}
		for _, ep := range se.GetEndpoints() {
			addrs = append(addrs, ep.GetAddress())
		}
	}
	slices.Sort(addrs)
	if len(slices.Compact(addrs)) != 9 {
		t.Fatalf("endpoint addresses are not distinct: %v", addrs)
	}

	vs := cfgs["VirtualService default/app-2"].Spec.(*networking.VirtualService)
	if !slices.Equal(vs.GetHosts(), []string{"app-2.example.com"}) || !slices.Equal(vs.GetGateways(), []string{"istio-system/ingressgateway"}) {
		t.Fatalf("virtual service: %v", vs)
	}
	if len(vs.GetHttp()) != 2 {
		t.Fatalf("want two routes, got %d", len(vs.GetHttp()))
	}
	canary, def := vs.GetHttp()[0], vs.GetHttp()[1]
	if m := canary.GetMatch(); len(m) != 2 || m[0].GetUri().GetPrefix() != BasePrefix || m[1].GetHeaders()["x-canary"].GetExact() != "true" {
		t.Fatalf("canary match: %v", m)
	}
	r := canary.GetRoute()
	// The last VirtualService splits to svc-2 and wraps around to svc-0.
	if len(r) != 2 || r[0].GetDestination().GetHost() != ServiceHost(2) || r[0].GetWeight() != 90 ||
		r[1].GetDestination().GetHost() != ServiceHost(0) || r[1].GetWeight() != 10 {
		t.Fatalf("canary route: %v", r)
	}
	if canary.GetTimeout().AsDuration().Seconds() != 5 || canary.GetRetries().GetAttempts() != 2 ||
		canary.GetRetries().GetPerTryTimeout().AsDuration().Seconds() != 2 {
		t.Fatalf("canary timeout/retries: %v %v", canary.GetTimeout(), canary.GetRetries())
	}
	if def.GetMatch()[0].GetUri().GetPrefix() != "/" || def.GetRoute()[0].GetDestination().GetHost() != ServiceHost(2) {
		t.Fatalf("default route: %v", def)
	}
}

func TestWriteUpdateChangesOnePrefix(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Options{Services: 4, Endpoints: 1}); err != nil {
		t.Fatal(err)
	}
	before := load(t, dir)
	if err := WriteUpdate(dir, 1, 4, UpdatePrefix); err != nil {
		t.Fatal(err)
	}
	after := load(t, dir)
	for k, c := range after {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok {
			continue
		}
		want := BasePrefix
		if k == "VirtualService default/app-1" {
			want = UpdatePrefix
		}
		if got := vs.GetHttp()[0].GetMatch()[0].GetUri().GetPrefix(); got != want {
			t.Errorf("%s: prefix %q, want %q", k, got, want)
		}
	}
	if len(before) != len(after) {
		t.Fatalf("update changed the object count: %d -> %d", len(before), len(after))
	}
}

func TestBadOptions(t *testing.T) {
	if err := Write(t.TempDir(), Options{}); err == nil {
		t.Error("zero services accepted")
	}
	if err := WriteUpdate(t.TempDir(), 5, 5, UpdatePrefix); err == nil {
		t.Error("index out of range accepted")
	}
	if err := WriteUpdate(t.TempDir(), 0, 5, "api"); err == nil {
		t.Error("prefix without / accepted")
	}
}

func TestEndpointAddressesStayDistinctAcrossOctets(t *testing.T) {
	seen := map[string]bool{}
	for i := range 300 {
		for j := range 3 {
			a := EndpointAddress(i, j, 3)
			if seen[a] {
				t.Fatalf("duplicate address %s", a)
			}
			seen[a] = true
		}
	}
	if got := EndpointAddress(0, 0, 3); got != "127.1.0.0" {
		t.Errorf("first address %s", got)
	}
}

// TestWorkloadIsInTheFastYAMLSubset keeps the benchmark measuring the
// parser users' config meets: every document written is in blockyaml's
// subset, so none takes the full YAML parser.
func TestWorkloadIsInTheFastYAMLSubset(t *testing.T) {
	docs := [][]byte{Gateway(), ServiceEntry(0, 3), VirtualService(7, 10, "/api/v3")}
	for _, doc := range docs {
		for part := range strings.SplitSeq(string(doc), "\n---\n") {
			if _, ok := blockyaml.Decode([]byte(part)); !ok {
				t.Errorf("outside blockyaml's subset:\n%s", part)
			}
		}
	}
}
