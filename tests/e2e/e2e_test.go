// Package e2e runs the real pilot-discovery binary, as a user would, on
// loopback ports, and talks to it with an Envoy-like ADS client and HTTP.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wayfinder-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = serverenv.BuildBinary(dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const gatewayID = "router~127.0.0.1~ingressgateway-1.istio-system~istio-system.svc.cluster.local"

func connect(t *testing.T, addr string) *adsc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := adsc.Dial(ctx, adsc.Config{Address: addr, Node: adsc.IstioNode(adsc.NodeOptions{
		IP: "127.0.0.1", PodName: "ingressgateway-1", Namespace: "istio-system",
		Labels: map[string]string{"istio": "ingressgateway"},
	})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func allACKed(s adsc.State) bool {
	for _, typ := range []string{adsc.ClusterType, adsc.EndpointType, adsc.ListenerType, adsc.RouteType} {
		if s.Types[typ].ACKs == 0 {
			return false
		}
	}
	return true
}

// The README's `make run`: the bundled samples are served without errors,
// a gateway gets the routes they describe, and SIGTERM closes its stream
// and exits 0.
func TestSamplesServedAndCleanShutdown(t *testing.T) {
	p := startProcess(t, copyDir(t, "../../manifests/samples"))
	p.WaitLog("config synced and first push computed", 30*time.Second)
	c := connect(t, p.GRPCAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitFor(ctx, allACKed); err != nil {
		t.Fatal(err)
	}
	s := c.State()
	if got := s.Names(adsc.ListenerType); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners %v", got)
	}
	vh := findVirtualHost(s.Routes["http.80"], "bookinfo.example.com:80")
	if vh == nil {
		t.Fatalf("no bookinfo virtual host in %v", s.Routes["http.80"])
	}
	var names []string
	for _, r := range vh.GetRoutes() {
		names = append(names, r.GetName())
	}
	if !slices.Equal(names, []string{"reviews-canary", "reviews", "productpage"}) {
		t.Errorf("route order %v", names)
	}
	if findVirtualHost(s.Routes["http.80"], "httpbin.example.com:80") == nil {
		t.Error("no httpbin.example.com virtual host")
	}
	for _, cl := range []string{"outbound|9080|v1|reviews.default.svc.cluster.local", "outbound|9080|v2|reviews.default.svc.cluster.local",
		"outbound|443||httpbin.org", "outbound|9080||productpage.default.svc.cluster.local"} {
		if s.Clusters[cl] == nil {
			t.Errorf("cluster %s missing; have %v", cl, s.Names(adsc.ClusterType))
		}
	}

	code, body := httpGet(t, "http://"+p.HTTPAddr+"/debug/configz")
	var cz debugapi.Configz
	if code != 200 || json.Unmarshal([]byte(body), &cz) != nil {
		t.Fatalf("configz %d %s", code, body)
	}
	if len(cz.Errors) != 0 {
		t.Errorf("the bundled samples have config errors: %+v", cz.Errors)
	}
	// The samples' 8 Istio objects, and the Gateway and VirtualService
	// their Gateway API example converts to.
	if len(cz.Configs) != 10 {
		t.Errorf("configz has %d objects, want the samples' 8 and 2 converted from the Gateway API", len(cz.Configs))
	}
	if code, _ := httpGet(t, "http://"+p.HTTPAddr+"/healthz/ready"); code != 200 {
		t.Errorf("ready %d", code)
	}
	if code, body := httpGet(t, "http://"+p.HTTPAddr+"/debug/config_dump?proxyID="+gatewayID); code != 200 || !strings.Contains(body, "reviews-canary") {
		t.Errorf("config_dump %d %.300s", code, body)
	}

	if err := p.Stop(15 * time.Second); err != nil {
		t.Errorf("exit after SIGTERM: %v; log:\n%s", err, p.LogText())
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Error("the gateway's stream stayed open after shutdown")
	}
	p.WaitLog("stopped", time.Second)
}

// A typo in a file is logged with file, document, object and field, and the
// process keeps serving the rest.
func TestBadFileLoggedWithLocation(t *testing.T) {
	dir := copyDir(t, "../../manifests/samples")
	writeFile(t, dir+"/typo.yaml", `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: typo, namespace: default}
spec:
  hosts: [typo.example.com]
  gateways: [istio-system/ingressgateway]
  http:
  - route: [{destination: {host: productpage.default.svc.cluster.local, port: {number: 70000}}}]
`)
	p := startProcess(t, dir)
	line := p.WaitLogFunc("error naming typo.yaml", func(m map[string]any) bool {
		j, _ := json.Marshal(m)
		return strings.Contains(string(j), "typo.yaml (document 1)") && strings.Contains(string(j), "port.number")
	}, 30*time.Second)
	if lvl := line["level"]; lvl != "WARN" && lvl != "ERROR" {
		t.Errorf("logged at %v: %v", lvl, line)
	}
	p.WaitLog("config synced and first push computed", 30*time.Second)
	c := connect(t, p.GRPCAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitFor(ctx, func(s adsc.State) bool {
		return allACKed(s) && findVirtualHost(s.Routes["http.80"], "bookinfo.example.com:80") != nil
	}); err != nil {
		t.Fatal(err)
	}
	if findVirtualHost(c.State().Routes["http.80"], "typo.example.com:80") != nil {
		t.Error("the invalid VirtualService was served")
	}
	if err := p.Stop(15 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// A missing config folder is a clear error and a non-zero exit.
func TestMissingConfigDirFails(t *testing.T) {
	out, err := exec.Command(binary, "discovery", "--config-dir", "/does/not/exist", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0").CombinedOutput()
	if err == nil {
		t.Fatalf("exited 0: %s", out)
	}
	if !strings.Contains(string(out), "/does/not/exist") {
		t.Errorf("error does not name the folder: %s", out)
	}
	out, err = exec.Command(binary, "discovery", "--config-dir", ".", "--log-level", "loud").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--log-level") {
		t.Errorf("bad log level: %v %s", err, out)
	}
}

func findVirtualHost(rc *routev3.RouteConfiguration, name string) *routev3.VirtualHost {
	for _, vh := range rc.GetVirtualHosts() {
		if vh.GetName() == name {
			return vh
		}
	}
	return nil
}
