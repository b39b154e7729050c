package core

import (
	"os"
	"path/filepath"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/networking/grpcgen"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
)

// fuzzProxyNamespaces are where the fuzzed gateway proxies run; each
// authenticates as ServiceAccount gw of its namespace.
var fuzzProxyNamespaces = []string{"istio-system", "apps"}

// fuzzGrants are the Secrets of other namespaces the proxies may get.
var fuzzGrants = grantList{granted: []string{"istio-system/gw-cert", "istio-system/gw-cert-cacert"}}

// fuzzed is one input's translation inputs, after validation.
type fuzzed struct {
	push     *model.PushContext
	world    *fuzzWorld
	rejected int // generated objects validation refused
}

// buildFuzzed parses manifest (objects validation refuses are dropped, as
// the store drops them), generates objects from choices on top, keeps the
// valid ones and indexes everything.
func buildFuzzed(manifestYAML, choices, cert, key []byte) fuzzed {
	parsed, _ := manifest.Parse("fuzz.yaml", manifestYAML, manifest.Options{})
	var valid []config.Config
	for _, c := range parsed {
		if validation.Validate(c) == nil {
			valid = append(valid, c)
		}
	}
	w := generate(&picker{b: choices}, valid, cert, key)
	rejected := 0
	for _, c := range w.configs {
		if validation.Validate(c) != nil {
			rejected++
			continue
		}
		valid = append(valid, c)
	}
	return fuzzed{push: model.NewPushContext(memory.New(valid), w), world: w, rejected: rejected}
}

// FuzzTranslateGenerated builds random valid configurations, a manifest
// (seeded with manifests/samples and the golden inputs) plus objects
// generated from the second input's bytes (Gateways with servers of every
// protocol and TLS mode, VirtualServices with HTTP, TLS and TCP routes and
// most of what an HTTP route can say, DestinationRules, ServiceEntries,
// registry Services with endpoints, Secrets), keeps what validation
// accepts, and runs every translator: BuildServices once, then
// BuildGatewayWithSecrets for each distinct gateway group of proxies of
// every selector and namespace (authenticated, and on the plaintext
// port), then grpcgen for proxyless clients. Nothing may panic, every
// resource must pass ValidateAll (inside its Anys too), and each
// snapshot must be consistent.
//
//	go test ./pilot/pkg/networking/core -run '^$' -fuzz FuzzTranslateGenerated -fuzztime 60s -fuzzminimizetime 5s
//
// (minimizing a large new input for the default 60s leaves a short run
// little time to fuzz)
func FuzzTranslateGenerated(f *testing.F) {
	cert, err := os.ReadFile("../listener/testdata/cert.pem")
	if err != nil {
		f.Fatal(err)
	}
	key, err := os.ReadFile("../listener/testdata/key.pem")
	if err != nil {
		f.Fatal(err)
	}
	samples, _ := filepath.Glob("../../../../manifests/samples/*.yaml")
	inputs, _ := filepath.Glob("testdata/*.yaml")
	choices := [][]byte{nil, []byte("\x03\x01\x02\x00\x01\x03\x02\x01\x00\x02\x03\x01\x01\x02\x00\x03"), seq(256, 1), seq(512, 7), seq(1024, 13)}
	for i, file := range append(samples, inputs...) {
		if filepath.Ext(file) != ".yaml" || len(file) > len(".golden.yaml") && file[len(file)-len(".golden.yaml"):] == ".golden.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, choices[i%len(choices)])
	}
	for _, c := range choices {
		f.Add([]byte{}, c)
	}
	f.Fuzz(func(t *testing.T, manifestYAML, choices []byte) {
		in := buildFuzzed(manifestYAML, choices, cert, key)
		checkTranslations(t, in)
	})
}

// seq is n bytes stepping by step, a seed that takes many branches.
func seq(n, step int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i * step)
	}
	return out
}

// checkTranslations runs every translator on in and checks their output.
func checkTranslations(t *testing.T, in fuzzed) {
	t.Helper()
	push := in.push
	services := BuildServices(push)
	secrets := kubeObjects{secrets: in.world.secrets}
	built := map[string]bool{}
	for _, ns := range fuzzProxyNamespaces {
		for _, labels := range fuzzSelectors {
			proxy := &model.Proxy{Type: model.Router, Namespace: ns, Labels: labels}
			gws := push.GatewaysForProxy(proxy)
			for _, scope := range []model.SecretScope{
				{Identity: &model.Identity{Namespace: ns, ServiceAccount: "gw", Method: model.MethodToken}, Authorizer: fuzzGrants},
				{}, // the plaintext port
			} {
				key := model.GatewayGroupKey(gws) + "/" + scope.Namespace()
				if built[key] {
					continue
				}
				built[key] = true
				gr := BuildGatewayWithSecrets(push, gws, secrets, scope)
				checkErrors(t, gr.Errors)
				checkResources(t, translation{gateway: gr, services: services})
			}
		}
	}
	checkErrors(t, services.Errors)

	checkGRPC(t, grpcgen.Build(push))
}

// checkGRPC checks the proxyless resources: each passes ValidateAll, names
// are unique, every API listener's route configuration is there, every
// EDS cluster has its assignment, and nothing is left over. (A SotW
// snapshot's Consistent does not apply: gRPC clients ask by name, and
// go-control-plane does not read the RDS name inside an API listener.)
func checkGRPC(t *testing.T, g grpcgen.Resources) {
	t.Helper()
	checkErrors(t, g.Errors)
	names := map[string]bool{}
	check := func(kind, name string, m validator) {
		if names[kind+"/"+name] {
			t.Errorf("grpcgen: duplicate %s %q", kind, name)
		}
		names[kind+"/"+name] = true
		if err := validateDeep(m); err != nil {
			t.Errorf("grpcgen %s %s fails validation: %v", kind, name, err)
		}
	}
	for _, r := range g.Routes {
		check("route", r.Name, r)
	}
	referenced := map[string]bool{}
	for _, l := range g.Listeners {
		check("listener", l.Name, l)
		hcm := &hcmv3.HttpConnectionManager{}
		if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
			t.Errorf("grpcgen listener %s: no HTTP connection manager in its API listener: %v", l.Name, err)
			continue
		}
		rds := hcm.GetRds().GetRouteConfigName()
		referenced[rds] = true
		if !names["route/"+rds] {
			t.Errorf("grpcgen listener %s names route configuration %q, which is not built", l.Name, rds)
		}
	}
	for _, r := range g.Routes {
		if !referenced[r.Name] {
			t.Errorf("grpcgen route configuration %s is named by no listener", r.Name)
		}
	}
	eds := map[string]bool{}
	for _, c := range g.Clusters {
		check("cluster", c.Name, c)
		if c.GetType() == clusterv3.Cluster_EDS {
			eds[c.GetEdsClusterConfig().GetServiceName()] = true
		}
	}
	for _, e := range g.Endpoints {
		check("endpoints", e.ClusterName, e)
		if !eds[e.ClusterName] {
			t.Errorf("grpcgen endpoints %s belong to no EDS cluster", e.ClusterName)
		}
	}
	for name := range eds {
		if !names["endpoints/"+name] {
			t.Errorf("grpcgen EDS cluster %s has no assignment", name)
		}
	}
}

// checkErrors asserts every reported problem says what and where.
func checkErrors(t *testing.T, errs []*config.Error) {
	t.Helper()
	for _, e := range errs {
		if e == nil || e.Message == "" {
			t.Errorf("config error without a message: %#v", e)
		}
	}
}

// The generator must not be vacuous: over a few hundred inputs nearly
// every object it builds passes validation, every kind and every server
// protocol and TLS mode occurs, and the translators build listeners,
// routes, secrets and clusters from them.
func TestFuzzGeneratorBuildsValidConfig(t *testing.T) {
	cert, err := os.ReadFile("../listener/testdata/cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("../listener/testdata/key.pem")
	if err != nil {
		t.Fatal(err)
	}
	generated, rejected := 0, 0
	kinds, protocols, modes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var listeners, routes, secrets, clusters int
	for i := range 300 {
		in := buildFuzzed(nil, seq(600, 2*i+1)[i%7:], cert, key)
		generated += len(in.world.configs)
		rejected += in.rejected
		for _, c := range in.world.configs {
			kinds[c.Kind.String()] = true
			if gw, ok := c.Spec.(*networking.Gateway); ok {
				for _, s := range gw.GetServers() {
					protocols[s.GetPort().GetProtocol()] = true
					if s.GetTls() != nil {
						modes[s.GetTls().GetMode().String()] = true
					}
				}
			}
		}
		for _, labels := range fuzzSelectors {
			gr := BuildGatewayWithSecrets(in.push, in.push.GatewaysForProxy(&model.Proxy{Type: model.Router, Namespace: "istio-system", Labels: labels}),
				kubeObjects{secrets: in.world.secrets}, model.SecretScope{Identity: &model.Identity{Namespace: "istio-system", ServiceAccount: "gw"}, Authorizer: fuzzGrants})
			listeners, routes, secrets = listeners+len(gr.Listeners), routes+len(gr.Routes), secrets+len(gr.Secrets)
		}
		clusters += len(BuildServices(in.push).Clusters)
	}
	if rejected*10 > generated {
		t.Errorf("validation rejected %d of %d generated objects; the generator should build valid ones", rejected, generated)
	}
	for _, want := range []string{"Gateway", "VirtualService", "DestinationRule", "ServiceEntry"} {
		if !kinds[want] {
			t.Errorf("no %s generated", want)
		}
	}
	for _, want := range []string{"HTTP", "HTTPS", "HTTP2", "GRPC", "TCP", "TLS"} {
		if !protocols[want] {
			t.Errorf("no server of protocol %s generated", want)
		}
	}
	for _, m := range fuzzTLSModes {
		if !modes[m.String()] {
			t.Errorf("no server with TLS mode %s generated", m)
		}
	}
	if listeners == 0 || routes == 0 || secrets == 0 || clusters == 0 {
		t.Errorf("translators built %d listeners, %d routes, %d secrets, %d clusters; want some of each", listeners, routes, secrets, clusters)
	}
}
