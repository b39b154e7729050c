package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// wayfinderCLI builds the wayfinder command once per test binary.
func wayfinderCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliPath = filepath.Join(filepath.Dir(binary), "wayfinder")
		out, err := exec.Command("go", "build", "-o", cliPath, "github.com/wayfinder-dev/wayfinder/pilot/cmd/wayfinder").CombinedOutput()
		if err != nil {
			cliErr = errors.New("building wayfinder: " + err.Error() + "\n" + string(out))
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// runCLI runs wayfinder and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, wayfinderCLI(t), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// The wayfinder binary against the pilot-discovery binary serving the
// samples to a gateway: proxy-status shows it synced, proxy-config its
// routes, version both builds; analyze passes the samples and fails a
// broken folder with exit status 1.
func TestWayfinderCLI(t *testing.T) {
	p := startProcess(t, copyDir(t, "../../manifests/samples"))
	p.WaitLog("config synced and first push computed", 30*time.Second)
	c := connect(t, p.GRPCAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitFor(ctx, allACKed); err != nil {
		t.Fatal(err)
	}
	addr := "--debug-addr=" + p.HTTPAddr

	// The server records the last ACK a moment after the client sends it.
	poll.Seen(t, "proxy-status to show the gateway synced", func() (string, bool) {
		out, _, code := runCLI(t, "proxy-status", addr)
		return "\n" + out, code == 0 && strings.Count(out, "SYNCED") == 4 && strings.Contains(out, gatewayID)
	}, poll.Timeout(20*time.Second), poll.Interval(50*time.Millisecond))

	out, errOut, code := runCLI(t, "proxy-config", "routes", "ingressgateway-1.istio-system", addr)
	if code != 0 || !strings.Contains(out, "bookinfo.example.com:80") || !strings.Contains(out, "http.80") {
		t.Errorf("proxy-config routes: exit %d, stderr %s\n%s", code, errOut, out)
	}
	out, _, code = runCLI(t, "version", addr)
	if code != 0 || !strings.Contains(out, "client version:") || !strings.Contains(out, "server version:") {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	if out, _, code = runCLI(t, "analyze", "../../manifests/samples"); code != 0 || !strings.Contains(out, "0 errors") {
		t.Errorf("analyze samples: exit %d\n%s", code, out)
	}
	broken := t.TempDir()
	writeFile(t, filepath.Join(broken, "vs.yaml"), `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: bad, namespace: default}
spec:
  hosts: [bad.example.com]
  http:
  - route: [{destination: {host: bad.example.com}, weight: 300}]
`)
	out, errOut, code = runCLI(t, "analyze", broken)
	if code != 1 || !strings.Contains(out, "vs.yaml:7: error: VirtualService default/bad: spec.http[0].route[0].weight:") || errOut != "" {
		t.Errorf("analyze broken: exit %d, stderr %q\n%s", code, errOut, out)
	}
	_, errOut, code = runCLI(t, "proxy-config", "routes", "nobody", addr)
	if code != 1 || !strings.Contains(errOut, "not connected") {
		t.Errorf("unknown proxy: exit %d, stderr %q", code, errOut)
	}
}
