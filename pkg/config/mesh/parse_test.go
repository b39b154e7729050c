package mesh

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// TestParseIstioConfigMap reads the mesh key of a user's istio ConfigMap
// (testdata/istio-configmap.in.yaml; its golden has the whole result) and
// checks what the telemetry, client IP and ext_authz work will read.
func TestParseIstioConfigMap(t *testing.T) {
	data, err := os.ReadFile("testdata/istio-configmap.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(ConfigMapSource("istio-system", "istio"), data)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Mesh
	if m.GetAccessLogFile() != "/dev/stdout" || m.GetAccessLogEncoding() != meshconfig.MeshConfig_JSON ||
		!strings.HasPrefix(m.GetAccessLogFormat(), `{"start_time"`) {
		t.Errorf("access log: %q %v %q", m.GetAccessLogFile(), m.GetAccessLogEncoding(), m.GetAccessLogFormat())
	}
	if gt := m.GetDefaultConfig().GetGatewayTopology(); gt.GetNumTrustedProxies() != 2 ||
		gt.GetForwardClientCertDetails() != meshconfig.ForwardClientCertDetails_SANITIZE_SET {
		t.Errorf("gatewayTopology: %v", gt)
	}
	if tr := m.GetDefaultConfig().GetTracing(); tr.GetSampling() != 10 || tr.GetZipkin().GetAddress() != "zipkin.istio-system:9411" {
		t.Errorf("tracing: %v", tr)
	}
	// The defaults not named in the ConfigMap stay, as in istiod.
	if m.GetDefaultConfig().GetDrainDuration().AsDuration().String() != "45s" {
		t.Errorf("defaultConfig lost istiod's drainDuration: %v", m.GetDefaultConfig())
	}
	kinds := map[string]func(*meshconfig.MeshConfig_ExtensionProvider) bool{
		"envoy":        func(p *meshconfig.MeshConfig_ExtensionProvider) bool { return p.GetEnvoyFileAccessLog() != nil },
		"file-json":    func(p *meshconfig.MeshConfig_ExtensionProvider) bool { return p.GetEnvoyFileAccessLog() != nil },
		"otel-als":     func(p *meshconfig.MeshConfig_ExtensionProvider) bool { return p.GetEnvoyOtelAls().GetPort() == 4317 },
		"otel-tracing": func(p *meshconfig.MeshConfig_ExtensionProvider) bool { return p.GetOpentelemetry() != nil },
		"zipkin":       func(p *meshconfig.MeshConfig_ExtensionProvider) bool { return p.GetZipkin().GetMaxTagLength() == 256 },
		"ext-authz-http": func(p *meshconfig.MeshConfig_ExtensionProvider) bool {
			return p.GetEnvoyExtAuthzHttp().GetPathPrefix() == "/check"
		},
		"ext-authz-grpc": func(p *meshconfig.MeshConfig_ExtensionProvider) bool {
			return p.GetEnvoyExtAuthzGrpc().GetPort() == 9000
		},
	}
	for name, ok := range kinds {
		p, err := c.Provider(name)
		if err != nil || !ok(p) {
			t.Errorf("provider %s: %v, %v", name, p, err)
		}
	}
	var names []string
	for _, p := range m.GetExtensionProviders() {
		names = append(names, p.GetName())
	}
	want := []string{"prometheus", "stackdriver", "envoy", "otel-als", "file-json", "otel-tracing", "zipkin", "ext-authz-http", "ext-authz-grpc"}
	if !slices.Equal(names, want) {
		t.Errorf("providers %v, want %v (istiod's built-ins first, then the ConfigMap's in order)", names, want)
	}
	if got := m.GetDefaultProviders().GetAccessLogging(); !slices.Equal(got, []string{"envoy", "otel-als"}) {
		t.Errorf("defaultProviders.accessLogging = %v", got)
	}
	if len(c.Warnings) != 0 || len(c.Unknown) != 0 {
		t.Errorf("warnings %v, unknown %v", c.Warnings, c.Unknown)
	}
	wantIgnored := []string{
		"defaultConfig.discoveryAddress", "defaultConfig.holdApplicationUntilProxyStarts", "defaultConfig.proxyMetadata",
		"enablePrometheusMerge", "outboundTrafficPolicy", "trustDomain",
	}
	if got := c.Ignored(); !slices.Equal(got, wantIgnored) {
		t.Errorf("Ignored() = %v, want %v", got, wantIgnored)
	}
}

// TestParseErrors: a bad mesh config is refused with an error per problem
// naming the source and the field.
func TestParseErrors(t *testing.T) {
	file := FileSource("/etc/istio/config/mesh")
	cm := ConfigMapSource("istio-system", "istio")
	cases := []struct {
		name string
		src  Source
		in   string
		want []string // each config.Error, rendered
	}{
		{"not YAML", file, "a: [", []string{"/etc/istio/config/mesh: not valid YAML: yaml: line 1: did not find expected node content"}},
		{"not a mapping", cm, "- a", []string{"ConfigMap istio-system/istio key mesh: the mesh config must be a mapping of fields, not a list"}},
		{"wrong type", file, "enableTracing: [true]", []string{"/etc/istio/config/mesh: enableTracing: invalid value for bool field enableTracing: ["}},
		{"unknown enum name, refused as by istiod", cm, "accessLogEncoding: XML", []string{
			`ConfigMap istio-system/istio key mesh: accessLogEncoding: unknown value "XML" (one of TEXT, JSON)`}},
		{"nested in a list", file, "extensionProviders:\n- name: z\n  zipkin:\n    port: abc", []string{
			`/etc/istio/config/mesh: extensionProviders[0].zipkin.port: invalid value for uint32 field port: "abc"`}},
		{"two kinds in one provider", file, "extensionProviders:\n- name: z\n  zipkin: {port: 1}\n  datadog: {port: 1}", []string{
			"/etc/istio/config/mesh: extensionProviders[0].zipkin: only one of datadog and zipkin may be set"}},
		{"negative trusted proxies", file, "defaultConfig:\n  gatewayTopology:\n    numTrustedProxies: -1", []string{
			"/etc/istio/config/mesh: defaultConfig.gatewayTopology.numTrustedProxies: invalid value for uint32 field numTrustedProxies: -1"}},
		{"unknown forwardClientCertDetails", file, "defaultConfig:\n  gatewayTopology:\n    forwardClientCertDetails: FORWARD", []string{
			`/etc/istio/config/mesh: defaultConfig.gatewayTopology.forwardClientCertDetails: unknown value "FORWARD"`}},
		{"zipkin tracer address", file, "defaultConfig:\n  tracing:\n    zipkin:\n      address: zipkin", []string{
			`/etc/istio/config/mesh: defaultConfig.tracing.zipkin.address: "zipkin" is not host:port`}},
		{"lightstep tracer", file, "defaultConfig:\n  tracing:\n    lightstep:\n      address: ls.example.com:8080", []string{
			"/etc/istio/config/mesh: defaultConfig.tracing.lightstep.accessToken: is required"}},
		{"tracer TLS", file, "defaultConfig:\n  tracing:\n    tlsSettings:\n      mode: MUTUAL", []string{
			"/etc/istio/config/mesh: defaultConfig.tracing.tlsSettings.clientCertificate: is required for MUTUAL",
			"/etc/istio/config/mesh: defaultConfig.tracing.tlsSettings.privateKey: is required for MUTUAL"}},
		{"istiod's other refusals", cm, "connectTimeout: 0s\nproxyListenPort: 70000\ntrustDomain: bad_domain\ndefaultConfig:\n  drainDuration: 1.5s\n  discoveryAddress: ''", []string{
			"ConfigMap istio-system/istio key mesh: proxyListenPort: port number 70000 must be in the range 1..65535",
			"ConfigMap istio-system/istio key mesh: connectTimeout: duration must be at least 1ms",
			"ConfigMap istio-system/istio key mesh: defaultConfig.drainDuration: only durations to seconds precision are supported",
			"ConfigMap istio-system/istio key mesh: defaultConfig.discoveryAddress: must be set",
			`ConfigMap istio-system/istio key mesh: trustDomain: trust domain name "bad_domain" invalid`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.src, []byte(tc.in))
			if err == nil {
				t.Fatalf("accepted: %v", c.Mesh)
			}
			got := config.ErrorsFor("", config.Key{}, err)
			if len(got) != len(tc.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, e := range got {
				if e.Source != tc.src.String() {
					t.Errorf("error %d source %q, want %q", i, e.Source, tc.src)
				}
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

// TestProviders: extension providers failing istiod's checks are warnings,
// as in istiod, and cannot be used; Provider says why.
func TestProviders(t *testing.T) {
	c, err := Parse(FileSource("mesh.yaml"), []byte(`
extensionProviders:
- name: als
  envoyHttpAls: {service: als.observability.svc.cluster.local}
- name: authz
  envoyExtAuthzGrpc: {service: "ns/authz.ns.svc.cluster.local", port: 9000, statusOnError: "403"}
- name: ip
  envoyTcpAls: {service: 10.0.0.1, port: 9000}
- name: both
  opentelemetry: {service: otel.o.svc.cluster.local, port: 4317, grpc: {}, http: {path: /v1/traces}}
- name: nokind
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"authz", "ip", "envoy"} {
		if _, err := c.Provider(ok); err != nil {
			t.Errorf("Provider(%s): %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"als":     `extension provider "als" is invalid: extensionProviders[0].envoyHttpAls.port: port number 0 must be in the range 1..65535`,
		"both":    `extension provider "both" is invalid: extensionProviders[3].opentelemetry: grpc and http cannot both be set`,
		"nokind":  `extension provider "nokind" is invalid: extensionProviders[4]: no provider kind is set`,
		"missing": `no extension provider is named "missing" in the mesh config`,
	} {
		_, err := c.Provider(name)
		if err == nil || err.Error() != want {
			t.Errorf("Provider(%s) = %v, want %s", name, err, want)
		}
	}
	if len(c.Warnings) != 3 {
		t.Errorf("%d warnings, want one per bad provider: %v", len(c.Warnings), c.Warnings)
	}
	for _, w := range c.Warnings {
		if !w.Warning || !strings.HasPrefix(w.Field, "extensionProviders[") || !strings.Contains(w.Message, "cannot be used") {
			t.Errorf("warning %+v", w)
		}
	}
}

// TestIgnoredAndUnknown: set fields outside ReadFields are reported at their
// highest level; names MeshConfig lacks are dropped and listed.
func TestIgnoredAndUnknown(t *testing.T) {
	c, err := Parse(FileSource("mesh.yaml"), []byte(`
rootNamespace: istio-config
outboundTrafficPolicy: {mode: REGISTRY_ONLY}
defaultConfig:
  proxyMetadata: {A: b}
  tracing: {sampling: 1, customTags: {a: {literal: {value: b}}}}
  gatewayTopology: {numTrustedProxies: 1}
  colourScheme: nope
meshFoo: 1
extensionProviders:
- name: x
  zipkin: {service: z.ns.svc.cluster.local, port: 9411, colour: blue}
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"defaultConfig.proxyMetadata", "outboundTrafficPolicy"}; !slices.Equal(c.Ignored(), want) {
		t.Errorf("Ignored() = %v, want %v", c.Ignored(), want)
	}
	if want := []string{"defaultConfig.colourScheme", "extensionProviders[0].zipkin.colour", "meshFoo"}; !slices.Equal(c.Unknown, want) {
		t.Errorf("Unknown = %v, want %v", c.Unknown, want)
	}
	if c.Mesh.GetRootNamespace() != "istio-config" {
		t.Errorf("rootNamespace %q", c.Mesh.GetRootNamespace())
	}
}

// TestEmptyIsDefaults: an empty source, or one of comments, is istiod's
// defaults.
func TestEmptyIsDefaults(t *testing.T) {
	for _, in := range []string{"", "# nothing\n", "{}", "null"} {
		c, err := Parse(FileSource("mesh.yaml"), []byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if d := Default(); !equalMesh(c.Mesh, d.Mesh) {
			t.Errorf("%q: not the defaults", in)
		}
		if c, err := Apply(FileSource("mesh.yaml"), []byte(in), nil); err != nil || !equalMesh(c.Mesh, Default().Mesh) {
			t.Errorf("%q onto a nil base: not the defaults (%v)", in, err)
		}
	}
}

func TestSourceString(t *testing.T) {
	for src, want := range map[Source]string{
		{}:                                       "defaults",
		FileSource("/etc/istio/mesh"):            "/etc/istio/mesh",
		ConfigMapSource("istio-system", "istio"): "ConfigMap istio-system/istio key mesh",
	} {
		if src.String() != want {
			t.Errorf("%#v: %q, want %q", src, src.String(), want)
		}
	}
	var ce *config.Error
	_, err := Parse(FileSource("x.yaml"), []byte("enableTracing: 3"))
	if !errors.As(err, &ce) || ce.Source != "x.yaml" || ce.Field != "enableTracing" {
		t.Errorf("error %#v is not a config.Error naming source and field", err)
	}
}
