package kube

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"

	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds pilot-discovery once, on first use, so a run that skips
// the cluster tests builds nothing.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wayfinder-kube-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "pilot-discovery")
		cmd := exec.Command("go", "build", "-o", binPath, "../../pilot/cmd/pilot-discovery")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building pilot-discovery: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// logLines collects a process's JSON log lines and lets a test wait for one.
type logLines struct {
	mu      sync.Mutex
	lines   []map[string]any
	changed chan struct{}
	done    chan struct{}
}

func readLog(r io.Reader) *logLines {
	l := &logLines{changed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"msg": sc.Text()}
			}
			l.mu.Lock()
			l.lines = append(l.lines, m)
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *logLines) wait(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	seen := 0
	for {
		l.mu.Lock()
		lines, changed := l.lines, l.changed
		l.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if match(lines[seen]) {
				return lines[seen]
			}
		}
		select {
		case <-changed:
		case <-l.done:
			t.Fatalf("pilot-discovery exited before logging %s; log: %v", what, lines)
		case <-deadline.C:
			t.Fatalf("pilot-discovery did not log %s; log: %v", what, lines)
		}
	}
}

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
	e := &env{t: t, c: c, ns: allowed, kube: c.Clientset()}
	var err error
	if e.istio, err = istioclient.NewForConfig(c.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	e.createGateway("gw")
	e.createVS(e.virtualService("ok", "ok.example.com", "x.example.com", ""))

	cmd := exec.Command(binary(t), "discovery", "--kubeconfig", c.RestrictedKubeconfig(),
		"--watch-namespaces", allowed+","+forbidden, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--log-format", "json", "--debounce-after", "10ms")
	stderr, err := cmd.StderrPipe()
	e.must(err)
	e.must(cmd.Start())
	logs := readLog(stderr)
	exited := make(chan error, 1)
	go func() { <-logs.done; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	serving := logs.wait(t, "serving", msgIs("serving"))
	grpcAddr, httpAddr := serving["grpc"].(string), serving["http"].(string)
	refused := logs.wait(t, "the forbidden watch", func(m map[string]any) bool {
		return m["msg"] == "kubernetes watch forbidden" && m["namespace"] == forbidden
	})
	if r, _ := refused["resource"].(string); !strings.Contains(r, forbidden) {
		t.Errorf("log line does not name the resource and namespace: %v", refused)
	}
	logs.wait(t, "ready", msgIs("config synced and first push computed"))
	resp, err := http.Get("http://" + httpAddr + "/healthz/ready")
	e.must(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz/ready = %d, want 200 while a namespace is forbidden", resp.StatusCode)
	}

	ctx, cancel := contextWithTimeout()
	defer cancel()
	gw, err := adsc.Dial(ctx, adsc.Config{Address: grpcAddr, Node: adsc.IstioNode(adsc.NodeOptions{IP: "127.0.0.1", PodName: "gw-0",
		Namespace: "istio-system", Labels: map[string]string{"istio": "ingressgateway"}})})
	e.must(err)
	defer gw.Close()
	waitFor(t, gw, "the allowed namespace's config", func(s adsc.State) bool { return virtualHost(s, "ok.example.com", "") })

	e.must(cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no exit after SIGTERM")
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
