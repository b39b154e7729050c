package grpc_test

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/xds"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/certs"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// A proxyless gRPC client reaches the secure ADS port over TLS, proving
// itself with a client certificate through the xDS bootstrap's "tls"
// channel credentials, and routes RPCs with what it was sent. gRPC-Go's
// bootstrap can also send a token (call_creds "jwt_token_file", gRFC A97),
// but only when GRPC_EXPERIMENTAL_XDS_BOOTSTRAP_CALL_CREDS was set before
// the process started, so this test uses the certificate. A client whose
// certificate names another namespace than its node is refused and
// counted, and the good client is unaffected.
func TestProxylessClientOverTLS(t *testing.T) {
	servingCA, clientCA := certs.NewCA(t, "serving"), certs.NewCA(t, "clients")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serving := servingCA.Server(t, "pilot-discovery.wayfinder-system.svc") // and 127.0.0.1
	a := startBackend(t, "a", map[string]string{"version": "v1"})
	cfgDir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(cfgDir, "se.yaml"), serviceEntry(a))
	s := serverenv.StartServer(t, bootstrap.Options{ConfigDir: cfgDir, Security: bootstrap.SecurityOptions{
		SecureGRPCAddr: "127.0.0.1:0", TLSCertFile: write("tls.crt", serving.CertPEM), TLSKeyFile: write("tls.key", serving.KeyPEM),
		ClientCAFile: write("client-ca.pem", clientCA.PEM),
	}})
	caFile := write("serving-ca.pem", servingCA.PEM)

	dial := func(pod, certNS string) testpb.TestServiceClient {
		t.Helper()
		leaf := clientCA.Client(t, certs.SPIFFE("cluster.local", certNS, "echo-client"))
		boot := `{
  "xds_servers": [{
    "server_uri": "` + s.SecureGRPCAddr().String() + `",
    "channel_creds": [{"type": "tls", "config": {
      "ca_certificate_file": "` + caFile + `",
      "certificate_file": "` + write(pod+".crt", leaf.CertPEM) + `",
      "private_key_file": "` + write(pod+".key", leaf.KeyPEM) + `"}}],
    "server_features": ["xds_v3"]
  }],
  "node": {
    "id": "sidecar~127.0.0.1~` + pod + `.default~default.svc.cluster.local",
    "metadata": {"GENERATOR": "grpc", "NAMESPACE": "default"},
    "locality": {}
  }
}`
		res, err := xds.NewXDSResolverWithConfigForTesting([]byte(boot))
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(target, grpcInsecure(), grpc.WithResolvers(res))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return newTestClient(cc)
	}

	good := dial("tls-good", "default")
	waitUntil(t, "an answer routed with config from the secure port", func() (string, error) { return call(good) },
		func(name string, err error) bool { return err == nil && name == "a" })

	// The wrong namespace: refused (PermissionDenied, counted); the good
	// client keeps working.
	bad := dial("tls-bad", "other")
	// A channel resolves (and so opens its ADS stream) on its first RPC.
	if name, err := call(bad); err == nil {
		t.Fatalf("the refused client routed an RPC to %q", name)
	}
	metricURL := "http://" + s.HTTPAddr().String() + "/metrics"
	poll.Until(t, "the client whose certificate names another namespace to be refused", func() bool {
		if namespaceMismatches(t, metricURL) >= 1 {
			return true
		}
		if _, err := call(good); err != nil { // paces the wait with useful work
			t.Fatalf("the good client failed while another was refused: %v", err)
		}
		return false
	}, poll.Timeout(waitTimeout), poll.Interval(0))
	if name, err := call(good); err != nil || name != "a" {
		t.Errorf("good client after the refusal: %q, %v", name, err)
	}
}

func namespaceMismatches(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `wayfinder_xds_auth_failures_total{reason="namespace_mismatch"} `); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
