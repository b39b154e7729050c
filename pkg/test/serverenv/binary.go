package serverenv

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

// startTimeout bounds how long the binary may take to log its addresses.
const startTimeout = 60 * time.Second

// BuildBinary builds pilot-discovery into dir, with the race detector when
// race is set, and returns its path.
func BuildBinary(dir string, race bool) (string, error) {
	out := filepath.Join(dir, "pilot-discovery")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/wayfinder-dev/wayfinder/pilot/cmd/pilot-discovery")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building pilot-discovery: %v\n%s", err, b)
	}
	return out, nil
}

// Binary is a running pilot-discovery whose JSON log lines are watched, so
// tests wait on what it says rather than on sleeps.
type Binary struct {
	t        testing.TB
	cmd      *exec.Cmd
	GRPCAddr string
	HTTPAddr string

	mu      sync.Mutex
	lines   []map[string]any
	changed chan struct{} // closed and replaced on every new line
	exited  chan struct{}
	exitErr error
}

// StartBinary runs `bin discovery ARGS...` on loopback ports the kernel
// chooses, logging JSON, and returns once it has logged its addresses. It
// is killed when the test ends if it is still running.
func StartBinary(t testing.TB, bin string, args ...string) *Binary {
	t.Helper()
	// Every listener on loopback, the secure one too (when it is on).
	all := append([]string{"discovery", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--secure-grpc-addr", "127.0.0.1:0", "--log-format", "json"}, args...)
	b := &Binary{t: t, cmd: exec.Command(bin, all...), changed: make(chan struct{}), exited: make(chan struct{})}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go b.read(stderr)
	t.Cleanup(func() {
		select {
		case <-b.exited:
		default:
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	})
	// Exactly "serving": other lines contain the word ("created
	// self-signed CA and serving certificate").
	line := b.WaitLogFunc("serving", func(m map[string]any) bool { return m["msg"] == "serving" }, startTimeout)
	b.GRPCAddr, _ = line["grpc"].(string)
	b.HTTPAddr, _ = line["http"].(string)
	if b.GRPCAddr == "" || b.HTTPAddr == "" {
		t.Fatalf("no addresses in %v", line)
	}
	return b
}

func (b *Binary) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = map[string]any{"msg": sc.Text(), "unstructured": true}
		}
		b.mu.Lock()
		b.lines = append(b.lines, m)
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}
	b.exitErr = b.cmd.Wait()
	close(b.exited)
}

// WaitLog returns the first log line whose message contains msg, waiting
// for it to be written.
func (b *Binary) WaitLog(msg string, timeout time.Duration) map[string]any {
	b.t.Helper()
	return b.WaitLogFunc(msg, func(m map[string]any) bool { return strings.Contains(fmt.Sprint(m["msg"]), msg) }, timeout)
}

// WaitLogFunc returns the first log line match accepts, waiting for it.
func (b *Binary) WaitLogFunc(what string, match func(map[string]any) bool, timeout time.Duration) map[string]any {
	b.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		b.mu.Lock()
		lines, changed := b.lines, b.changed
		b.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if match(lines[seen]) {
				return lines[seen]
			}
		}
		select {
		case <-changed:
		case <-b.exited:
			b.t.Fatalf("pilot-discovery exited (%v) before logging %q; log:\n%s", b.exitErr, what, b.LogText())
		case <-deadline.C:
			b.t.Fatalf("pilot-discovery did not log %q within %s; log:\n%s", what, timeout, b.LogText())
		}
	}
}

// LogText is everything logged so far, a JSON object a line.
func (b *Binary) LogText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, l := range b.lines {
		j, _ := json.Marshal(l)
		s.Write(j)
		s.WriteByte('\n')
	}
	return s.String()
}

// Stop sends SIGTERM and returns the exit error (nil for exit 0).
func (b *Binary) Stop(timeout time.Duration) error {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.t.Fatal(err)
	}
	select {
	case <-b.exited:
		return b.exitErr
	case <-time.After(timeout):
		b.t.Fatalf("pilot-discovery did not exit within %s of SIGTERM; log:\n%s", timeout, b.LogText())
		return nil
	}
}

// CopyDir copies the files of src into a new temporary folder.
func CopyDir(t testing.TB, src string) string {
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
		WriteFile(t, filepath.Join(dst, e.Name()), string(data))
	}
	return dst
}
