package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is pilot-discovery built once by TestMain.
var binary string

// process is a running pilot-discovery whose JSON log lines are watched,
// so tests wait on what it says rather than on sleeps.
type process struct {
	t        *testing.T
	cmd      *exec.Cmd
	grpcAddr string
	httpAddr string

	mu      sync.Mutex
	lines   []map[string]any
	changed chan struct{} // closed and replaced on every new line
	exited  chan struct{}
	exitErr error
}

func buildBinary(dir string) (string, error) {
	out := filepath.Join(dir, "pilot-discovery")
	cmd := exec.Command("go", "build", "-race", "-o", out, "../../pilot/cmd/pilot-discovery")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building pilot-discovery: %w", err)
	}
	return out, nil
}

// startProcess runs pilot-discovery on loopback ports chosen by the kernel
// and waits until it logs its addresses.
func startProcess(t *testing.T, configDir string, args ...string) *process {
	t.Helper()
	all := append([]string{"discovery", "--config-dir", configDir, "--grpc-addr", "127.0.0.1:0",
		"--http-addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug", "--debounce-after", "10ms"}, args...)
	p := &process{t: t, cmd: exec.Command(binary, all...), changed: make(chan struct{}), exited: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stderr)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	line := p.waitLog("serving", 30*time.Second)
	p.grpcAddr, _ = line["grpc"].(string)
	p.httpAddr, _ = line["http"].(string)
	if p.grpcAddr == "" || p.httpAddr == "" {
		t.Fatalf("no addresses in %v", line)
	}
	return p
}

func (p *process) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = map[string]any{"msg": sc.Text(), "unstructured": true}
		}
		p.mu.Lock()
		p.lines = append(p.lines, m)
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
	p.exitErr = p.cmd.Wait()
	close(p.exited)
}

// waitLog returns the first log line whose message contains msg, waiting
// for it to be written.
func (p *process) waitLog(msg string, timeout time.Duration) map[string]any {
	p.t.Helper()
	return p.waitLogFunc(msg, func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["msg"]), msg) }, timeout)
}

func (p *process) waitLogFunc(what string, match func(map[string]any) bool, timeout time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		p.mu.Lock()
		lines, changed := p.lines, p.changed
		p.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if match(lines[seen]) {
				return lines[seen]
			}
		}
		select {
		case <-changed:
		case <-p.exited:
			p.t.Fatalf("pilot-discovery exited (%v) before logging %q; log:\n%s", p.exitErr, what, p.logText())
		case <-deadline.C:
			p.t.Fatalf("pilot-discovery did not log %q within %s; log:\n%s", what, timeout, p.logText())
		}
	}
}

func (p *process) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// stop sends SIGTERM and returns the exit error (nil for exit 0).
func (p *process) stop(timeout time.Duration) error {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
		return p.exitErr
	case <-time.After(timeout):
		p.t.Fatalf("pilot-discovery did not exit within %s of SIGTERM; log:\n%s", timeout, p.logText())
		return nil
	}
}

// copyDir copies the files of src into a new temporary folder.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, e.Name()), string(data))
	}
	return dst
}

// writeFile replaces a file atomically, as editors and config tools do.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
