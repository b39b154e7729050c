package kube

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// binary is pilot-discovery, built once for the package's tests.
func binary(t *testing.T) string { return serverenv.BinaryOnce(t) }

func msgIs(msg string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["msg"] == msg }
}

// The real binary in Kubernetes mode, with the restricted user and a
// forbidden namespace among --watch-namespaces: it logs the refusal naming
// the namespace, becomes ready, serves the allowed namespace, and exits 0
// on SIGTERM.
func TestBinaryServesAllowedNamespacesAndNamesTheForbiddenOne(t *testing.T) {
	c, allowed := newCluster(t, "bin")
	forbidden := c.Namespace(t, "bin-forbidden")
	c.AllowRestricted(t, allowed)
	e := clientEnv(t, c, allowed)
	e.createGateway("gw")
	e.createVS(e.virtualService("ok", "ok.example.com", "x.example.com", ""))

	bin := serverenv.StartBinary(t, binary(t), "--kubeconfig", c.RestrictedKubeconfig(),
		"--watch-namespaces", allowed+","+forbidden, "--debounce-after", "10ms")
	grpcAddr, httpAddr := bin.GRPCAddr, bin.HTTPAddr
	refused := bin.WaitLogFunc("the forbidden watch", func(m map[string]any) bool {
		return m["msg"] == "kubernetes watch forbidden" && m["namespace"] == forbidden
	}, waitTimeout)
	if r, _ := refused["resource"].(string); !strings.Contains(r, forbidden) {
		t.Errorf("log line does not name the resource and namespace: %v", refused)
	}
	bin.WaitLogFunc("ready", msgIs("config synced and first push computed"), waitTimeout)
	resp, err := http.Get("http://" + httpAddr + "/healthz/ready")
	e.must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz/ready = %d, want 200 while a namespace is forbidden", resp.StatusCode)
	}

	gw := serverenv.Gateway(t, grpcAddr, "gw-0", map[string]string{"istio": "ingressgateway"}, nil)
	waitFor(t, gw, "the allowed namespace's config", func(s adsc.State) bool { return virtualHost(s, "ok.example.com", "") })

	if err := bin.Stop(waitTimeout); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// Both config sources named: one clear error, non-zero exit.
func TestBinaryRejectsTwoConfigSources(t *testing.T) {
	cluster.Get(t) // skipped with the other cluster tests when the binaries are missing
	out, err := exec.Command(binary(t), "discovery", "--config-dir", ".", "--kubeconfig", "/nonexistent",
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0").CombinedOutput()
	if err == nil {
		t.Fatalf("exited 0: %s", out)
	}
	if !strings.Contains(string(out), "--config-dir and --kubeconfig are both set") {
		t.Errorf("output does not explain: %s", out)
	}
}
