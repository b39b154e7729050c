package authz

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extauthzhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extauthztcpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var updateExtAuthz = flag.Bool("update-extauthz", false,
	"rewrite testdata/extauthz/*.golden.yaml from buildExtAuthz and delete goldens whose input is gone")

// extAuthzCase is one golden input: a mesh config, and the services that
// exist (namespace -> hostname -> ports), which the test's resolver
// consults as istiod's LookupCluster consults its service index.
type extAuthzCase struct {
	Mesh     string                         `json:"mesh"`
	Services map[string]map[string][]uint32 `json:"services"`
	// Providers names the providers to build, in order; absent, every
	// envoyExtAuthzHttp and envoyExtAuthzGrpc provider of the mesh config.
	Providers []string `json:"providers"`
}

// testClusters resolves like ProviderClusters, from the case's services.
func testClusters(services map[string]map[string][]uint32) ClusterResolver {
	return func(service string, port uint32) (string, error) {
		ns, host, named := strings.Cut(service, "/")
		if !named {
			host = service
		}
		var found []string
		for n, hosts := range services {
			if _, ok := hosts[host]; ok && (!named || n == ns) {
				found = append(found, n)
			}
		}
		slices.Sort(found)
		switch {
		case len(found) == 0:
			return "", fmt.Errorf("could not find service %s in the service registry", service)
		case len(found) > 1:
			return "", fmt.Errorf("found %s in multiple namespaces %v, specify the namespace explicitly in the format of <Namespace>/<Hostname>", service, found)
		}
		if !slices.Contains(services[found[0]][host], port) {
			return "", fmt.Errorf("service %s has no port %d", service, port)
		}
		return fmt.Sprintf("outbound|%d||%s", port, host), nil
	}
}

// TestExtAuthzGolden builds every extension provider of each
// testdata/extauthz/*.in.yaml mesh config, in order, and records the HTTP
// and network filters, or the error, and what mesh.Config.Provider says
// of the provider. The input's leading comment (copied into the golden)
// names the istiod function and testdata the case follows. Every filter
// must pass ValidateAll, inside its Any too.
func TestExtAuthzGolden(t *testing.T) {
	golden.Run(t, "testdata/extauthz", *updateExtAuthz, func(t *testing.T, file string, data []byte) []byte {
		var c extAuthzCase
		if err := yaml.UnmarshalStrict(data, &c); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		cfg, err := mesh.Parse(mesh.FileSource(file+"#mesh"), []byte(c.Mesh))
		if err != nil {
			t.Fatalf("mesh config: %v", err)
		}
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			b.WriteString(line)
		}
		for _, p := range cfg.Mesh.GetExtensionProviders() {
			if c.Providers != nil && !slices.Contains(c.Providers, p.GetName()) ||
				c.Providers == nil && p.GetEnvoyExtAuthzGrpc() == nil && p.GetEnvoyExtAuthzHttp() == nil {
				continue
			}
			b.WriteString("---\n")
			meshErr := ""
			if _, err := cfg.Provider(p.GetName()); err != nil {
				meshErr = err.Error()
			}
			// The provider itself, not cfg.Provider's answer, so that
			// buildExtAuthz's own checks are exercised on invalid ones.
			ea, err := buildExtAuthz(p, testClusters(c.Services))
			var https []*hcmv3.HttpFilter
			var tcps []*listenerv3.Filter
			errText := ""
			if err != nil {
				if ea != nil {
					t.Errorf("%s: a filter beside the error %v", p.GetName(), err)
				}
				var ee *extAuthzError
				if !errors.As(err, &ee) || ee.Provider != p.GetName() {
					t.Errorf("%s: error %v is not an *extAuthzError naming the provider", p.GetName(), err)
				}
				errText = err.Error()
			} else {
				checkExtAuthz(t, ea)
				https = append(https, ea.http)
				if ea.tcp != nil {
					tcps = append(tcps, ea.tcp)
				}
			}
			golden.WriteYAML(t, &b, "provider", []map[string]string{{"name": p.GetName(), "meshConfigProblem": meshErr, "error": errText}})
			golden.Section(t, &b, "http", https)
			golden.Section(t, &b, "tcp", tcps)
		}
		return b.Bytes()
	})
}

// checkExtAuthz runs ValidateAll on both filters and on the configs packed
// in them, and checks the gate every filter must carry.
func checkExtAuthz(t *testing.T, ea *extAuthz) {
	t.Helper()
	if ea == nil || ea.http == nil {
		t.Fatal("no HTTP filter and no error")
	}
	if err := ea.http.ValidateAll(); err != nil {
		t.Errorf("http filter: %v", err)
	}
	h := &extauthzhttpv3.ExtAuthz{}
	if err := ea.http.GetTypedConfig().UnmarshalTo(h); err != nil {
		t.Fatal(err)
	}
	if err := h.ValidateAll(); err != nil {
		t.Errorf("http ext_authz: %v", err)
	}
	checkGate(t, "http", h.GetFilterEnabledMetadata().String(), "envoy.filters.http.rbac")
	if ea.tcp == nil {
		return
	}
	if err := ea.tcp.ValidateAll(); err != nil {
		t.Errorf("tcp filter: %v", err)
	}
	n := &extauthztcpv3.ExtAuthz{}
	if err := ea.tcp.GetTypedConfig().UnmarshalTo(n); err != nil {
		t.Fatal(err)
	}
	if err := n.ValidateAll(); err != nil {
		t.Errorf("tcp ext_authz: %v", err)
	}
	checkGate(t, "tcp", n.GetFilterEnabledMetadata().String(), "envoy.filters.network.rbac")
}

func checkGate(t *testing.T, which, gate, rbac string) {
	t.Helper()
	for _, want := range []string{rbac, "istio_ext_authz_shadow_effective_policy_id", `prefix:"istio-ext-authz"`} {
		if !strings.Contains(strings.ReplaceAll(gate, " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("%s filter_enabled_metadata %s lacks %s", which, gate, want)
		}
	}
}

// Providers that cannot be built give an error naming the provider and
// each field, and never a filter: the caller then denies (istiod's
// -deny-due-to-bad-CUSTOM-action rules).
func TestExtAuthzErrors(t *testing.T) {
	known := testClusters(map[string]map[string][]uint32{
		"foo": {"authz.foo.svc.cluster.local": {9000}},
		"bar": {"dup.example.com": {9000}},
		"baz": {"dup.example.com": {9000}},
	})
	grpc := func(c *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider) *meshconfig.MeshConfig_ExtensionProvider {
		return &meshconfig.MeshConfig_ExtensionProvider{Name: "p", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc{EnvoyExtAuthzGrpc: c}}
	}
	http := func(c *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider) *meshconfig.MeshConfig_ExtensionProvider {
		return &meshconfig.MeshConfig_ExtensionProvider{Name: "p", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{EnvoyExtAuthzHttp: c}}
	}
	type grpcP = meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider
	type httpP = meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider
	for _, tc := range []struct {
		name     string
		p        *meshconfig.MeshConfig_ExtensionProvider
		clusters ClusterResolver
		want     []string
	}{
		{"missing provider", nil, known, []string{"no such extension provider"}},
		{"not ext_authz", &meshconfig.MeshConfig_ExtensionProvider{Name: "p", Provider: &meshconfig.MeshConfig_ExtensionProvider_Zipkin{
			Zipkin: &meshconfig.MeshConfig_ExtensionProvider_ZipkinTracingProvider{Service: "z", Port: 9411},
		}}, known, []string{`"p"`, "is zipkin, not an ext_authz provider"}},
		{"no kind", &meshconfig.MeshConfig_ExtensionProvider{Name: "p"}, known, []string{"of no kind"}},
		{"unknown service", grpc(&grpcP{Service: "nope.foo.svc.cluster.local", Port: 9000}), known,
			[]string{"envoyExtAuthzGrpc.service: could not find service nope.foo.svc.cluster.local"}},
		{"wrong namespace", grpc(&grpcP{Service: "bar/authz.foo.svc.cluster.local", Port: 9000}), known,
			[]string{"envoyExtAuthzGrpc.service: could not find service bar/authz.foo.svc.cluster.local"}},
		{"ambiguous service", http(&httpP{Service: "dup.example.com", Port: 9000}), known,
			[]string{"envoyExtAuthzHttp.service: found dup.example.com in multiple namespaces [bar baz]"}},
		{"port the service lacks", grpc(&grpcP{Service: "foo/authz.foo.svc.cluster.local", Port: 9001}), known,
			[]string{"envoyExtAuthzGrpc.service: service foo/authz.foo.svc.cluster.local has no port 9001"}},
		{"no resolver", grpc(&grpcP{Service: "foo/authz.foo.svc.cluster.local", Port: 9000}), nil,
			[]string{"envoyExtAuthzGrpc.service: cannot resolve foo/authz.foo.svc.cluster.local: no service registry"}},
		{"resolver names no cluster", grpc(&grpcP{Service: "foo/authz.foo.svc.cluster.local", Port: 9000}),
			func(string, uint32) (string, error) { return "", nil }, []string{"resolves to no cluster"}},
		{"empty service, bad port", grpc(&grpcP{Port: 70000}), known,
			[]string{"envoyExtAuthzGrpc.port: must be in the range [1, 65535], found: 70000", "envoyExtAuthzGrpc.service: must not be empty"}},
		{"status not a number", grpc(&grpcP{Service: "foo/authz.foo.svc.cluster.local", Port: 9000, StatusOnError: "forbidden"}), known,
			[]string{`envoyExtAuthzGrpc.statusOnError: invalid statusOnError "forbidden"`}},
		{"status Envoy lacks", http(&httpP{Service: "foo/authz.foo.svc.cluster.local", Port: 9000, StatusOnError: "999"}), known,
			[]string{"envoyExtAuthzHttp.statusOnError: unsupported statusOnError 999"}},
		{"status zero", http(&httpP{Service: "foo/authz.foo.svc.cluster.local", Port: 9000, StatusOnError: "0"}), known,
			[]string{"unsupported statusOnError 0"}},
		{"relative path prefix", http(&httpP{Service: "foo/authz.foo.svc.cluster.local", Port: 9000, PathPrefix: "check"}), known,
			[]string{"envoyExtAuthzHttp.pathPrefix: must begin with `/`"}},
		{"bare wildcard headers", http(&httpP{
			Service: "foo/authz.foo.svc.cluster.local", Port: 9000,
			IncludeRequestHeadersInCheck: []string{"x-a", "*"}, HeadersToUpstreamOnAllow: []string{"*"},
			HeadersToDownstreamOnDeny: []string{"*"}, HeadersToDownstreamOnAllow: []string{"*"},
		}), known, []string{
			"envoyExtAuthzHttp.includeRequestHeadersInCheck: a single wildcard", "envoyExtAuthzHttp.headersToUpstreamOnAllow",
			"envoyExtAuthzHttp.headersToDownstreamOnDeny", "envoyExtAuthzHttp.headersToDownstreamOnAllow",
		}},
		{"header name Envoy rejects", http(&httpP{
			Service: "foo/authz.foo.svc.cluster.local", Port: 9000,
			IncludeAdditionalHeadersInCheck: map[string]string{"bad header\n": "v"},
		}), known, []string{"envoyExtAuthzHttp: Envoy would reject the ext_authz filter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ea, err := buildExtAuthz(tc.p, tc.clusters)
			if err == nil {
				t.Fatalf("no error; filters %v", ea)
			}
			if ea != nil {
				t.Errorf("filters beside the error: %v", ea)
			}
			var ee *extAuthzError
			if !errors.As(err, &ee) {
				t.Errorf("%T is not an *extAuthzError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The same provider builds byte-identical filters (snapshot versions are
// hashes of content), and a provider's timeout is copied, not shared, so
// that later edits of the mesh config cannot reach a pushed filter.
func TestExtAuthzDeterministic(t *testing.T) {
	clusters := testClusters(map[string]map[string][]uint32{"foo": {"authz.foo.svc.cluster.local": {9000}}})
	p := &meshconfig.MeshConfig_ExtensionProvider{Name: "p", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{
		EnvoyExtAuthzHttp: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider{
			Service: "authz.foo.svc.cluster.local", Port: 9000,
			IncludeAdditionalHeadersInCheck: map[string]string{"x-c": "3", "x-a": "1", "x-b": "2", "x-d": "4"},
		},
	}}
	first, err := buildExtAuthz(p, clusters)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		again, err := buildExtAuthz(p, clusters)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.http.GetTypedConfig().GetValue(), again.http.GetTypedConfig().GetValue()) {
			t.Fatal("two builds of one provider differ")
		}
	}
}
