package mesh

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// TestDefaultsFollowIstiod spot-checks DefaultMeshConfig against istiod
// 1.29's DefaultMeshConfig and DefaultProxyConfig (pkg/config/mesh/mesh.go)
// on the fields Wayfinder reads; testdata/defaults.golden.yaml records the
// whole of it.
func TestDefaultsFollowIstiod(t *testing.T) {
	m := DefaultMeshConfig()
	if m.GetRootNamespace() != "istio-system" {
		t.Errorf("rootNamespace = %q, istiod's is istio-system", m.GetRootNamespace())
	}
	if m.GetAccessLogFile() != "" || m.GetAccessLogFormat() != "" {
		t.Errorf("istiod has no access log file and no format by default; got %q, %q", m.GetAccessLogFile(), m.GetAccessLogFormat())
	}
	if m.GetAccessLogEncoding() != meshconfig.MeshConfig_TEXT {
		t.Errorf("accessLogEncoding = %v, istiod's is TEXT", m.GetAccessLogEncoding())
	}
	if !m.GetEnableTracing() {
		t.Error("enableTracing is true in istiod's defaults")
	}
	if m.GetDefaultProviders() == nil || proto.Size(m.GetDefaultProviders()) != 0 {
		t.Errorf("defaultProviders = %v, istiod's is set and empty", m.GetDefaultProviders())
	}
	var names []string
	for _, p := range m.GetExtensionProviders() {
		names = append(names, p.GetName())
	}
	if want := []string{"prometheus", "stackdriver", "envoy"}; !slices.Equal(names, want) {
		t.Errorf("extension providers %v, istiod's are %v", names, want)
	}
	if got := m.GetExtensionProviders()[2].GetEnvoyFileAccessLog().GetPath(); got != "/dev/stdout" {
		t.Errorf("provider envoy logs to %q, istiod's to /dev/stdout", got)
	}
	pc := m.GetDefaultConfig()
	if pc.GetTracing() != nil {
		t.Errorf("defaultConfig.tracing = %v; istiod has had no default tracer since 1.22", pc.GetTracing())
	}
	if pc.GetGatewayTopology() != nil {
		t.Errorf("defaultConfig.gatewayTopology = %v, unset in istiod", pc.GetGatewayTopology())
	}
	if pc.GetDiscoveryAddress() != "istiod.istio-system.svc:15012" || pc.GetDrainDuration().AsDuration() != 45*time.Second ||
		pc.GetServiceCluster() != "istio-proxy" || pc.GetStatusPort() != 15020 || pc.GetProxyAdminPort() != 15000 {
		t.Errorf("defaultConfig differs from istiod's DefaultProxyConfig: %v", pc)
	}
	if m.GetConnectTimeout().AsDuration() != 10*time.Second || m.GetTrustDomain() != "cluster.local" {
		t.Errorf("connectTimeout %v, trustDomain %q; istiod's are 10s, cluster.local", m.GetConnectTimeout().AsDuration(), m.GetTrustDomain())
	}
}

// TestDefaultsValidate: istiod's defaults pass istiod's validation without
// warnings (istiod's TestDefaultMeshConfig), so Default never panics.
func TestDefaultsValidate(t *testing.T) {
	c := Default()
	if len(c.Warnings) != 0 || len(c.Set) != 0 || len(c.Unknown) != 0 {
		t.Errorf("defaults: warnings %v, set %v, unknown %v", c.Warnings, c.Set, c.Unknown)
	}
	if !proto.Equal(c.Mesh, DefaultMeshConfig()) {
		t.Errorf("Default().Mesh differs from DefaultMeshConfig()")
	}
	if c.Source.String() != "defaults" {
		t.Errorf("source %q", c.Source)
	}
}

// TestDefaultsAreFresh: each call returns a value of its own, so a caller
// changing one cannot change the next.
func TestDefaultsAreFresh(t *testing.T) {
	a := DefaultMeshConfig()
	a.RootNamespace = "changed"
	a.ExtensionProviders[0].Name = "changed"
	a.DefaultConfig.DiscoveryAddress = "changed:1"
	if b := DefaultMeshConfig(); b.RootNamespace != "istio-system" || b.ExtensionProviders[0].Name != "prometheus" ||
		b.DefaultConfig.DiscoveryAddress == "changed:1" {
		t.Errorf("DefaultMeshConfig shares state between calls: %v", b)
	}
}

func equalMesh(a, b *meshconfig.MeshConfig) bool { return proto.Equal(a, b) }
