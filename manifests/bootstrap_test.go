package manifests_test

import (
	"os"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/grpc_credential/v3"    // FileBasedMetadataConfig
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3" // HttpProtocolOptions
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pkg/envoystats"
)

func readBootstrap(t *testing.T, path string) *bootstrapv3.Bootstrap {
	t.Helper()
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatalf("%s is not an Envoy v3 Bootstrap: %v", path, err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &b
}

// Both Envoy bootstraps are valid v3 Bootstraps; the TLS one dials the
// secure port by its Service name, verifies it against root-cert.pem and
// sends the projected token as "authorization: Bearer".
func TestEnvoyBootstraps(t *testing.T) {
	for _, path := range []string{"envoy/bootstrap.yaml", "envoy/bootstrap-tls.yaml"} {
		// The per-route statistics tags the deployed gateways carry.
		if got := readBootstrap(t, path).GetStatsConfig(); !proto.Equal(got, envoystats.StatsConfig()) {
			t.Errorf("%s: stats_config %v, want %v", path, got, envoystats.StatsConfig())
		}
	}
	b := readBootstrap(t, "envoy/bootstrap-tls.yaml")
	svcs := b.GetDynamicResources().GetAdsConfig().GetGrpcServices()
	if len(svcs) != 1 {
		t.Fatalf("%d ADS gRPC services, want 1", len(svcs))
	}
	g := svcs[0].GetGoogleGrpc()
	if g.GetTargetUri() != "pilot-discovery.wayfinder-system.svc:15012" {
		t.Errorf("target %q, want pilot-discovery.wayfinder-system.svc:15012", g.GetTargetUri())
	}
	if f := g.GetChannelCredentials().GetSslCredentials().GetRootCerts().GetFilename(); f != "/var/run/secrets/wayfinder/root-cert.pem" {
		t.Errorf("root certs from %q, want the mounted root-cert.pem", f)
	}
	cc := g.GetCallCredentials()
	if len(cc) != 1 || cc[0].GetFromPlugin().GetName() != "envoy.grpc_credentials.file_based_metadata" {
		t.Fatalf("call credentials %v, want the file_based_metadata plugin", cc)
	}
	any := cc[0].GetFromPlugin().GetTypedConfig()
	m, err := any.UnmarshalNew()
	if err != nil {
		t.Fatal(err)
	}
	cfg, ok := m.(interface {
		GetHeaderKey() string
		GetHeaderPrefix() string
	})
	if !ok || cfg.GetHeaderKey() != "authorization" || cfg.GetHeaderPrefix() != "Bearer " {
		t.Errorf("file_based_metadata %v, want header authorization with prefix \"Bearer \"", m)
	}
}
