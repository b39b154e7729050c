package mesh

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"
)

// TestMerge checks Apply's merge rules, which follow istiod's
// ApplyMeshConfig and MergeProxyConfig; the cases mirror istiod's own
// TestApplyMeshConfigDefaults, TestDeepMerge and TestProxyConfigMerge.
func TestMerge(t *testing.T) {
	// The base istiod's TestDeepMerge uses: defaults with a metrics default
	// provider, one stackdriver provider and two trust domain aliases.
	deepBase := func() *meshconfig.MeshConfig {
		m := DefaultMeshConfig()
		m.DefaultProviders = &meshconfig.MeshConfig_DefaultProviders{Metrics: []string{"stackdriver"}}
		m.ExtensionProviders = []*meshconfig.MeshConfig_ExtensionProvider{{
			Name: "stackdriver",
			Provider: &meshconfig.MeshConfig_ExtensionProvider_Stackdriver{
				Stackdriver: &meshconfig.MeshConfig_ExtensionProvider_StackdriverProvider{
					MaxNumberOfAttributes: wrapperspb.Int64(3),
				},
			},
		}}
		m.TrustDomainAliases = []string{"default", "both"}
		return m
	}
	cases := []struct {
		name string
		base func() *meshconfig.MeshConfig // defaults when nil
		in   string
		// want is YAML of the fields to compare: each top-level field it
		// names must equal the result's.
		want string
	}{
		{
			name: "a field set to its zero value is set so",
			in:   "enableTracing: false",
			want: "enableTracing: false\naccessLogEncoding: TEXT",
		},
		{
			name: "a field set to null keeps the default",
			in:   "rootNamespace:\naccessLogFile: /dev/stdout",
			want: "rootNamespace: istio-system\naccessLogFile: /dev/stdout",
		},
		{
			name: "proto names are accepted",
			in:   "access_log_file: /dev/stdout\nroot_namespace: gateways",
			want: "rootNamespace: gateways\naccessLogFile: /dev/stdout",
		},
		{
			name: "a list is replaced, not appended to",
			in:   "defaultServiceExportTo: [foo]",
			want: "defaultServiceExportTo: [foo]",
		},
		{
			name: "a message field is replaced whole",
			in:   "outboundTrafficPolicy: {}",
			want: "outboundTrafficPolicy: {}",
		},
		{
			name: "defaultConfig is merged field by field",
			in:   "defaultConfig:\n  gatewayTopology:\n    numTrustedProxies: 2\n  concurrency: 4",
			want: `defaultConfig:
  binaryPath: /usr/local/bin/envoy
  configPath: ./etc/istio/proxy
  controlPlaneAuthPolicy: MUTUAL_TLS
  discoveryAddress: istiod.istio-system.svc:15012
  drainDuration: 45s
  proxyAdminPort: 15000
  serviceCluster: istio-proxy
  statNameLength: 189
  statusPort: 15020
  terminationDrainDuration: 5s
  concurrency: 4
  gatewayTopology:
    numTrustedProxies: 2`,
		},
		{
			name: "defaultConfig.tracing is replaced whole",
			base: func() *meshconfig.MeshConfig {
				m := DefaultMeshConfig()
				m.DefaultConfig.Tracing = &meshconfig.Tracing{
					Sampling: 5,
					Tracer:   &meshconfig.Tracing_Zipkin_{Zipkin: &meshconfig.Tracing_Zipkin{Address: "zipkin:9411"}},
				}
				return m
			},
			in: "defaultConfig:\n  tracing:\n    sampling: 50",
			want: `defaultConfig:
  binaryPath: /usr/local/bin/envoy
  configPath: ./etc/istio/proxy
  controlPlaneAuthPolicy: MUTUAL_TLS
  discoveryAddress: istiod.istio-system.svc:15012
  drainDuration: 45s
  proxyAdminPort: 15000
  serviceCluster: istio-proxy
  statNameLength: 189
  statusPort: 15020
  terminationDrainDuration: 5s
  tracing:
    sampling: 50`,
		},
		{
			name: "proxyMetadata keeps the base's keys",
			base: func() *meshconfig.MeshConfig {
				m := DefaultMeshConfig()
				m.DefaultConfig.ProxyMetadata = map[string]string{"A": "base", "B": "base"}
				return m
			},
			in:   "defaultConfig:\n  proxyMetadata:\n    B: doc\n    C: doc",
			want: "defaultConfig:\n  proxyMetadata: {A: base, B: doc, C: doc}\n" + defaultProxyBody,
		},
		{
			name: "proxyHeaders keeps the base's headers the document leaves unset",
			base: func() *meshconfig.MeshConfig {
				m := DefaultMeshConfig()
				m.DefaultConfig.ProxyHeaders = &meshconfig.ProxyConfig_ProxyHeaders{
					ForwardedClientCert: meshconfig.ForwardClientCertDetails_APPEND_FORWARD,
					Server:              &meshconfig.ProxyConfig_ProxyHeaders_Server{Value: "server"},
					RequestId:           &meshconfig.ProxyConfig_ProxyHeaders_RequestId{Disabled: wrapperspb.Bool(true)},
				}
				return m
			},
			in:   "defaultConfig:\n  proxyHeaders:\n    server:\n      disabled: true",
			want: "defaultConfig:\n  proxyHeaders:\n    forwardedClientCert: APPEND_FORWARD\n    server: {disabled: true}\n    requestId: {disabled: true}\n" + defaultProxyBody,
		},
		{
			name: "defaultProviders: set other default provider",
			base: deepBase,
			in:   "defaultProviders:\n  tracing: [foo]",
			want: "defaultProviders:\n  metrics: [stackdriver]\n  tracing: [foo]\ntrustDomainAliases: [both, default]",
		},
		{
			name: "defaultProviders: override default provider",
			base: deepBase,
			in:   "defaultProviders:\n  metrics: [foo]",
			want: "defaultProviders:\n  metrics: [foo]",
		},
		{
			name: "extensionProviders: replace builtin provider in place",
			in:   "extensionProviders:\n- name: envoy\n  envoyFileAccessLog:\n    path: /var/log/gw.log\n- name: prometheus\n  envoyOtelAls: {service: otel.o.svc.cluster.local, port: 4317}",
			want: `extensionProviders:
- name: prometheus
  envoyOtelAls: {service: otel.o.svc.cluster.local, port: 4317}
- name: stackdriver
  stackdriver: {}
- name: envoy
  envoyFileAccessLog: {path: /var/log/gw.log}`,
		},
		{
			name: "extensionProviders: add provider with existing type",
			base: deepBase,
			in:   "extensionProviders:\n- name: stackdriver-annotations\n  stackdriver:\n    maxNumberOfAnnotations: 5",
			want: `extensionProviders:
- name: stackdriver
  stackdriver: {maxNumberOfAttributes: 3}
- name: stackdriver-annotations
  stackdriver: {maxNumberOfAnnotations: 5}`,
		},
		{
			name: "extensionProviders: an empty list removes nothing",
			in:   "extensionProviders: []",
			want: "extensionProviders:\n- {name: prometheus, prometheus: {}}\n- {name: stackdriver, stackdriver: {}}\n- {name: envoy, envoyFileAccessLog: {path: /dev/stdout}}",
		},
		{
			name: "extensionProviders: a name defined twice collapses into the later, at the earlier's place",
			in: `extensionProviders:
- {name: a, zipkin: {service: z1.ns.svc.cluster.local, port: 9411}}
- {name: b, zipkin: {service: z2.ns.svc.cluster.local, port: 9411}}
- {name: a, zipkin: {service: z3.ns.svc.cluster.local, port: 9411}}`,
			want: `extensionProviders:
- {name: prometheus, prometheus: {}}
- {name: stackdriver, stackdriver: {}}
- {name: envoy, envoyFileAccessLog: {path: /dev/stdout}}
- {name: a, zipkin: {service: z3.ns.svc.cluster.local, port: 9411}}
- {name: b, zipkin: {service: z2.ns.svc.cluster.local, port: 9411}}`,
		},
		{
			name: "trustDomainAliases: sorted union with the base's",
			base: deepBase,
			in:   "trustDomainAliases: [added, both]",
			want: "trustDomainAliases: [added, both, default]",
		},
		{
			name: "default_config in snake_case is dropped, as istiod's lookup misses it",
			in:   "default_config:\n  gatewayTopology:\n    numTrustedProxies: 2",
			want: defaultProxyYAML,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := DefaultMeshConfig()
			if tc.base != nil {
				base = tc.base()
			}
			before := proto.Clone(base)
			c, err := Apply(FileSource("mesh.yaml"), []byte(tc.in), base)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !proto.Equal(base, before) {
				t.Error("Apply changed its base")
			}
			js, err := yaml.YAMLToJSON([]byte(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			want := &meshconfig.MeshConfig{}
			if err := protojson.Unmarshal(js, want); err != nil {
				t.Fatalf("want: %v", err)
			}
			for _, fd := range present(want.ProtoReflect().Descriptor(), mustObject(t, js)) {
				got, exp := c.Mesh.ProtoReflect().Get(fd), want.ProtoReflect().Get(fd)
				if !got.Equal(exp) {
					t.Errorf("%s:\n got %v\nwant %v", fd.JSONName(), got, exp)
				}
			}
		})
	}
}

// defaultProxyYAML is istiod's default defaultConfig, for wants that
// name defaultConfig.
const defaultProxyYAML = "defaultConfig:\n" + defaultProxyBody

const defaultProxyBody = `  binaryPath: /usr/local/bin/envoy
  configPath: ./etc/istio/proxy
  controlPlaneAuthPolicy: MUTUAL_TLS
  discoveryAddress: istiod.istio-system.svc:15012
  drainDuration: 45s
  proxyAdminPort: 15000
  serviceCluster: istio-proxy
  statNameLength: 189
  statusPort: 15020
  terminationDrainDuration: 5s`

func mustObject(t *testing.T, js []byte) map[string]json.RawMessage {
	t.Helper()
	obj, ok := object(js)
	if !ok {
		t.Fatalf("not an object: %s", js)
	}
	return obj
}

// TestMergeWarnsOfDuplicateAndSnakeCase: what istiod does silently with
// these, Wayfinder does too, and says so.
func TestMergeWarnsOfDuplicateAndSnakeCase(t *testing.T) {
	c, err := Parse(FileSource("mesh.yaml"), []byte(`
default_providers: {tracing: [a]}
extensionProviders:
- {name: a, zipkin: {service: z1.ns.svc.cluster.local, port: 9411}}
- {name: a, zipkin: {service: z3.ns.svc.cluster.local, port: 9411}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range c.Warnings {
		got = append(got, w.Error())
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		`mesh.yaml: default_providers: ignored: istiod reads this field only when it is spelled defaultProviders`,
		`mesh.yaml: extensionProviders[1].name: "a" is also the name of extensionProviders[0]`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
}
