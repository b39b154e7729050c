package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/wayfinder-dev/wayfinder/pilot/cmd/wayfinder/app"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/cli"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const configYAML = objects.PublicGatewayYAML + `---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints:
  - {address: 127.0.0.11, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews.default.svc.cluster.local
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bookinfo, namespace: default}
spec:
  hosts: [bookinfo.example.com]
  gateways: [istio-system/public]
  http:
  - match: [{uri: {prefix: /reviews}}]
    route: [{destination: {host: reviews.default.svc.cluster.local, port: {number: 9080}, subset: v1}}]
`

var gwLabels = map[string]string{"istio": "ingressgateway"}

// server starts pilot-discovery in-process on a folder holding configYAML
// and connects two gateways: gw-good ACKs everything, gw-picky NACKs every
// route configuration.
func server(t *testing.T) (*bootstrap.Server, *adsc.Client, *adsc.Client) {
	t.Helper()
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), configYAML)
	s := serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, PodName: "pilot-0"})
	good := serverenv.Gateway(t, s.GRPCAddr().String(), "gw-good", gwLabels, nil)
	picky := serverenv.Gateway(t, s.GRPCAddr().String(), "gw-picky", gwLabels, func(typeURL string, _ []*anypb.Any) error {
		if typeURL == adsc.RouteType {
			return errors.New("test proxy refuses routes")
		}
		return nil
	})
	serverenv.WaitFor(t, good, "routes", serverenv.WaitTimeout, func(st adsc.State) bool { return len(st.Names(adsc.RouteType)) > 0 })
	serverenv.WaitFor(t, picky, "route NACK", serverenv.WaitTimeout, func(st adsc.State) bool { return st.Types[adsc.RouteType].NACKs > 0 })
	return s, good, picky
}

// run executes the wayfinder command with args and returns its output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), serverenv.WaitTimeout)
	defer cancel()
	err := app.Execute(ctx, app.NewRootCommand(&out), args...)
	return out.String(), err
}

// eventually runs the command until check accepts its output: the server
// learns of an ACK a moment after the client sends it.
func eventually(t *testing.T, check func(string) bool, args ...string) string {
	t.Helper()
	var out string
	poll.Seen(t, "wayfinder "+strings.Join(args, " "), func() (string, bool) {
		var err error
		out, err = run(t, args...)
		return fmt.Sprintf("err %v, output:\n%s", err, out), err == nil && check(out)
	}, poll.Timeout(serverenv.WaitTimeout), poll.Interval(20*time.Millisecond))
	return out
}

func line(out, substr string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

func TestProxyStatus(t *testing.T) {
	s, _, _ := server(t)
	addr := "--debug-addr=" + s.HTTPAddr().String()
	out := eventually(t, func(out string) bool {
		g := line(out, "gw-good")
		return strings.Count(g, "SYNCED") == 4 && strings.Contains(line(out, "gw-picky"), "NACKED")
	}, "proxy-status", addr)
	t.Logf("proxy-status:\n%s", out)
	if h := line(out, "NAME"); !strings.Contains(h, "CDS") || !strings.Contains(h, "LDS") || !strings.Contains(h, "EDS") ||
		!strings.Contains(h, "RDS") || !strings.Contains(h, "REPLICA") {
		t.Errorf("header %q", h)
	}
	picky := line(out, "gw-picky")
	if strings.Count(picky, "SYNCED") != 3 || !strings.Contains(picky, "pilot-0") {
		t.Errorf("gw-picky row %q: want CDS, LDS, EDS synced, RDS NACKED, replica pilot-0", picky)
	}

	js, err := run(t, "proxy-status", addr, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var st []cli.ProxyStatus
	if err := json.Unmarshal([]byte(js), &st); err != nil || len(st) != 2 {
		t.Fatalf("proxy-status -o json: %v\n%s", err, js)
	}
	for _, ty := range st[1].Types {
		if ty.Type == "rds" && (ty.Summary != "NACKED" || ty.LastNack == nil || !strings.Contains(ty.LastNack.Message, "refuses routes")) {
			t.Errorf("gw-picky rds %+v", ty)
		}
	}
}

func TestProxyConfig(t *testing.T) {
	s, _, _ := server(t)
	addr := "--debug-addr=" + s.HTTPAddr().String()
	cases := []struct{ typ, want string }{
		{"listeners", "0.0.0.0_80"},
		{"routes", "bookinfo.example.com:80"},
		{"clusters", "reviews.default.svc.cluster.local"},
		{"endpoints", "127.0.0.11:9080"},
	}
	for _, tc := range cases {
		// The pod name alone names the proxy when it is unique.
		out, err := run(t, "proxy-config", tc.typ, "gw-good", addr)
		t.Logf("proxy-config %s:\n%s", tc.typ, out)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("proxy-config %s: err %v, want %q in\n%s", tc.typ, err, tc.want, out)
		}
	}
	out, err := run(t, "proxy-config", "routes", "gw-good.istio-system", addr)
	if r := line(out, "/reviews*"); err != nil || !strings.Contains(r, "outbound|9080|v1|reviews.default.svc.cluster.local") || !strings.Contains(r, "http.80") {
		t.Errorf("routes table: err %v\n%s", err, out)
	}
	out, err = run(t, "proxy-config", "clusters", "gw-good", addr)
	if r := line(out, "reviews"); err != nil || !strings.Contains(r, "9080") || !strings.Contains(r, "outbound") || !strings.Contains(r, "EDS") {
		t.Errorf("clusters table: err %v\n%s", err, out)
	}

	js, err := run(t, "proxy-config", "listeners", "gw-good", addr, "-o", "json")
	var lds admin.ListenersConfigDump
	if err != nil || protojson.Unmarshal([]byte(js), &lds) != nil || len(lds.GetDynamicListeners()) != 1 || lds.DynamicListeners[0].GetName() != "0.0.0.0_80" {
		t.Errorf("listeners -o json: err %v\n%s", err, js)
	}
	y, err := run(t, "proxy-config", "clusters", "gw-good", addr, "-o", "yaml")
	var m map[string]any
	if err != nil || yaml.Unmarshal([]byte(y), &m) != nil || m["dynamicActiveClusters"] == nil {
		t.Errorf("clusters -o yaml: err %v\n%s", err, y)
	}

	if _, err := run(t, "proxy-config", "routes", "gw-none", addr); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("unknown proxy: err %v", err)
	}
	if _, err := run(t, "proxy-config", "routes", "gw", addr); err == nil {
		t.Errorf("unknown pod prefix: no error")
	}
	if _, err := run(t, "proxy-config", "widgets", "gw-good", addr); err == nil || !strings.Contains(err.Error(), "widgets") {
		t.Errorf("unknown type: err %v", err)
	}
}

func TestVersion(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), configYAML)
	s := serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, PodName: "pilot-0"})
	out, err := run(t, "version", "--debug-addr="+s.HTTPAddr().String())
	if err != nil || !strings.Contains(out, "client version: ") || !strings.Contains(line(out, "server version:"), "replica pilot-0") {
		t.Errorf("version: err %v\n%s", err, out)
	}
	// The server unreachable: the client's version, then the error.
	out, err = run(t, "version", "--debug-addr=127.0.0.1:1")
	if err == nil || !strings.Contains(out, "client version: ") {
		t.Errorf("version without a server: err %v\n%s", err, out)
	}
}

// The token in --token-file is sent as a bearer token, read afresh for
// each request.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	serverenv.WriteFile(t, filepath.Join(dir, "config.yaml"), configYAML)
	s := serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir})
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A front that requires the token, as the debug server does in
	// Kubernetes mode, and passes the request on.
	backend := &url.URL{Scheme: "http", Host: s.HTTPAddr().String()}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, `{"error":"unauthenticated"}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	if out, err := run(t, "version", "--debug-addr="+front.URL, "--token-file="+tok); err != nil || !strings.Contains(out, "server version:") {
		t.Fatalf("with token: err %v\n%s", err, out)
	}
	_, err := run(t, "version", "--debug-addr="+front.URL)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("without token: err %v, want 401 and a hint", err)
	}
}

// analyze prints one finding a line with file and line, and fails (exit 1
// in main) when there are errors; -o json carries the same for CI.
func TestAnalyze(t *testing.T) {
	const testdata = "../../../pkg/config/analysis/testdata/"
	out, err := run(t, "analyze", testdata+"clean")
	if err != nil || !strings.Contains(out, "0 errors, 0 warnings") {
		t.Errorf("clean: err %v\n%s", err, out)
	}
	out, err = run(t, "analyze", testdata+"invalid", testdata+"unreachable")
	if !errors.Is(err, cli.ErrFindings) {
		t.Errorf("invalid: err %v, want ErrFindings", err)
	}
	if l := line(out, "weight -5"); !strings.HasPrefix(l, testdata+"invalid/broken.yaml:16: error: VirtualService default/weights: spec.http[0].route[0].weight:") {
		t.Errorf("weight finding %q in\n%s", l, out)
	}
	if l := line(out, "istio-system/missing"); !strings.Contains(l, "unreachable/routes.yaml:19: warning:") {
		t.Errorf("missing gateway finding %q", l)
	}
	out, err = run(t, "analyze", testdata+"unreachable", "-o", "json")
	var r cli.AnalyzeReport
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Errors != 0 || r.Warnings != len(r.Findings) || r.Warnings < 4 {
		t.Errorf("warnings only: err %v, report %+v", err, r)
	}
	// --domain-suffix completes short hosts in files too: a destination
	// "reviews" of a folder whose ServiceEntry is under example.internal.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shop.yaml"), []byte(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.example.internal]
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: default}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.example.com]
  gateways: [public]
  http: [{route: [{destination: {host: reviews, port: {number: 9080}}}]}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "analyze", dir, "--domain-suffix", "example.internal"); err != nil || !strings.Contains(out, "0 errors, 0 warnings") {
		t.Errorf("--domain-suffix example.internal: err %v\n%s", err, out)
	}
	if out, _ := run(t, "analyze", dir); !strings.Contains(out, "reviews.default.svc.cluster.local") {
		t.Errorf("default suffix: want reviews.default.svc.cluster.local reported missing\n%s", out)
	}
	if _, err := run(t, "analyze"); err == nil {
		t.Error("analyze with neither folders nor --kubeconfig: no error")
	}
	if _, err := run(t, "analyze", filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("analyze of a missing folder: no error")
	}
}

// analyze --mesh-config checks Telemetry providers against the given
// mesh config: with it, the provider the file defines is found and its
// missing Service reported; without it (istiod's defaults) the provider
// is unknown. A mesh config that does not parse is an error naming it.
func TestAnalyzeMeshConfig(t *testing.T) {
	const testdata = "../../../pkg/config/analysis/testdata/"
	dir, meshFile := testdata+"telemetry-targets", testdata+"telemetry-targets.mesh.yaml"
	out, _ := run(t, "analyze", dir, "--mesh-config", meshFile)
	if !strings.Contains(out, `provider "als": could not find service als.observability.svc.cluster.local`) {
		t.Errorf("with --mesh-config:\n%s", out)
	}
	out, _ = run(t, "analyze", dir)
	if !strings.Contains(out, `access log provider "als" is not in the mesh config`) {
		t.Errorf("without --mesh-config:\n%s", out)
	}
	bad := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(bad, []byte("enableTracing: maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "analyze", dir, "--mesh-config", bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad mesh config: err %v, want one naming %s", err, bad)
	}
}
