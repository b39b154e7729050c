package file

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// readAsUser is os.ReadFile refusing a file no one may read, as the kernel
// does for anyone but root. Tests run as root in CI, where a file of mode
// 000 reads fine; there, this stands in for the permission check, and
// everywhere else the kernel's check is the one tested.
func readAsUser(p string) ([]byte, error) {
	if os.Geteuid() == 0 {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o444 == 0 {
			return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES}
		}
	}
	return os.ReadFile(p)
}

// unreadableEnv is settleEnv (fake clock, no watcher) reading files as a
// user would.
func unreadableEnv(t *testing.T, files map[string]string) (*env, *recorder, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, files, func(o *Options) {
		o.Clock = clk
		o.RescanInterval = time.Hour
		o.disableWatch = true
		o.readFile = readAsUser
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	return e, rec, clk
}

func (e *env) chmod(rel string, mode os.FileMode) {
	e.t.Helper()
	if err := os.Chmod(e.path(rel), mode); err != nil {
		e.t.Fatal(err)
	}
}

// problemsOf returns the standing problems of file rel.
func (e *env) problemsOf(rel string) []*config.Error {
	var out []*config.Error
	for _, p := range e.c.ConfigErrors() {
		if strings.HasPrefix(p.Source, e.path(rel)) {
			out = append(out, p)
		}
	}
	return out
}

func (e *env) wantProblem(rel, text string) {
	e.t.Helper()
	got := e.problemsOf(rel)
	for _, p := range got {
		if strings.Contains(p.Message, text) {
			return
		}
	}
	e.t.Fatalf("problems of %s = %v, want one saying %q", rel, got, text)
}

// A file made unreadable is reported by the scan that finds it, keeps
// serving its objects however long it stays so (it is not an empty file),
// and is back as it was once readable again; removed, it is a deletion as
// any other.
func TestUnreadableFileKeepsItsObjects(t *testing.T) {
	e, rec, clk := unreadableEnv(t, map[string]string{
		"a.yaml": docs(gateway("default", "gw", 80), invalid(virtualService("default", "bad", "bad.example.com"), "spec.hosts")),
		"b.yaml": virtualService("default", "vs", "b.example.com"),
	})
	rec.expect("add Gateway default/gw", "add VirtualService default/vs")
	e.wantProblem("a.yaml", "rejected by the test validator")

	e.chmod("a.yaml", 0)
	e.scanNow()
	e.wantProblem("a.yaml", "permission denied")
	e.wantProblem("a.yaml", "rejected by the test validator")
	for range 3 {
		clk.Step(2 * defaultEmptyGrace)
		e.scanNow()
	}
	rec.expectNone()
	if e.c.Get(schema.Gateway, "default", "gw") == nil {
		t.Fatal("the unreadable file's Gateway was removed")
	}
	if n := problemLogs(e, "a.yaml"); n != 2 {
		t.Errorf("%d problems of a.yaml logged, want 2 (the invalid object, then the read), each once", n)
	}

	e.chmod("a.yaml", 0o644)
	e.scanNow()
	rec.expectNone()
	if got := e.problemsOf("a.yaml"); len(got) != 1 || !strings.Contains(got[0].Message, "rejected by the test validator") {
		t.Fatalf("problems of a.yaml readable again = %v, want its invalid object's alone", got)
	}

	// Unreadable, then removed: deleted once the removal has settled.
	e.chmod("a.yaml", 0)
	e.scanNow()
	e.remove("a.yaml")
	e.scanNow()
	rec.expectNone()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("delete Gateway default/gw")
	if got := e.problemsOf("a.yaml"); len(got) != 0 {
		t.Errorf("problems of a.yaml after its removal = %v", got)
	}
	if !strings.Contains(e.logs.String(), `level=WARN msg="config file removed; removing the objects it defined"`) {
		t.Errorf("the removal was not logged as a warning:\n%s", e.logs.String())
	}
}

// A file unreadable from the start serves nothing and is reported; when
// it can be read, it is taken in once settled.
func TestUnreadableNewFile(t *testing.T) {
	e, rec, clk := unreadableEnv(t, map[string]string{"b.yaml": virtualService("default", "vs", "b.example.com")})
	rec.expect("add VirtualService default/vs")
	e.write("a.yaml", gateway("default", "gw", 80))
	e.chmod("a.yaml", 0)
	e.scanNow()
	e.wantProblem("a.yaml", "permission denied")
	e.chmod("a.yaml", 0o644)
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("add Gateway default/gw")
	if got := e.problemsOf("a.yaml"); len(got) != 0 {
		t.Errorf("problems of a.yaml = %v", got)
	}
}

// A change of mode alone raises a scan: the unreadable file is reported
// long before the periodic rescan (an hour here), within the settle
// window on an idle machine.
func TestChmodIsReportedAtOnce(t *testing.T) {
	e := newEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80)}, func(o *Options) {
		o.RescanInterval = time.Hour
		o.readFile = readAsUser
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	rec.expect("add Gateway default/gw")
	e.startupWalks()

	start := time.Now()
	e.chmod("a.yaml", 0)
	deadline := start.Add(timeout)
	poll.Until(t, "a.yaml made unreadable to be reported", func() bool { return len(e.problemsOf("a.yaml")) > 0 },
		poll.Timeout(time.Until(deadline)), poll.Interval(time.Millisecond))
	t.Logf("reported %v after the chmod", time.Since(start).Round(time.Millisecond))
	e.wantProblem("a.yaml", "permission denied")

	e.chmod("a.yaml", 0o644)
	poll.Seen(t, "a.yaml readable again to be reported no more", func() (string, bool) {
		p := e.problemsOf("a.yaml")
		return fmt.Sprint(p), len(p) == 0
	}, poll.Timeout(time.Until(deadline)), poll.Interval(time.Millisecond))
	e.barrier(rec, 0)
	if e.c.Get(schema.Gateway, "default", "gw") == nil {
		t.Fatal("the Gateway was removed")
	}
}

// A named pipe in a file's place is not read (the read would block every
// scan) and keeps what the file held, whether a walk or the settle
// window's look at a pending change finds it.
func TestNamedPipeInPlaceOfAFile(t *testing.T) {
	e, rec, clk := unreadableEnv(t, map[string]string{
		"a.yaml": gateway("default", "gw", 80),
		"b.yaml": virtualService("default", "vs", "b.example.com"),
	})
	rec.expect("add Gateway default/gw", "add VirtualService default/vs")

	// Found by a walk.
	e.remove("a.yaml")
	if err := syscall.Mkfifo(e.path("a.yaml"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	e.scanNow()
	clk.Step(2 * defaultSettle)
	e.scanNow()
	rec.expectNone()
	e.wantProblem("a.yaml", "a named pipe, not a regular file")
	// A file again, read by name: the walk's word on the pipe goes.
	e.remove("a.yaml")
	e.write("a.yaml", gateway("default", "gw", 80))
	e.c.scanMu.Lock()
	e.c.loadPaths([]string{e.path("a.yaml")}, true) // as a watcher event naming it does
	e.c.scanMu.Unlock()
	e.flush()
	rec.expectNone()
	if got := e.problemsOf("a.yaml"); len(got) != 0 {
		t.Fatalf("problems of a.yaml, a file again = %v", got)
	}

	// Found by the settle window's look at b.yaml, changed and pending.
	e.writeInPlace("b.yaml", virtualService("default", "vs", "c.example.com"))
	e.scanNow()
	e.remove("b.yaml")
	if err := syscall.Mkfifo(e.path("b.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	clk.Step(defaultSettle)
	e.c.rescanPending()
	e.flush()
	rec.expectNone()
	if got := e.c.ConfigErrors(); !strings.Contains(errorsText(got), e.path("b.yaml")+": cannot read file: a named pipe") {
		t.Fatalf("problems = %v, want b.yaml's named pipe", got)
	}
	for _, k := range []config.Key{{Kind: schema.Gateway, Namespace: "default", Name: "gw"}, {Kind: schema.VirtualService, Namespace: "default", Name: "vs"}} {
		if e.c.Get(k.Kind, k.Namespace, k.Name) == nil {
			t.Errorf("%s removed", k)
		}
	}
}

// A symlinked config file whose target went is gone: its objects are
// removed once that has settled, and the dangling link stands reported.
func TestDanglingSymlinkReported(t *testing.T) {
	outside := t.TempDir()
	target := filepath.Join(outside, "gw.yaml")
	if err := os.WriteFile(target, []byte(gateway("default", "gw", 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	e, rec, clk := unreadableEnv(t, nil)
	symlink(t, target, e.path("gw.yaml"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("add Gateway default/gw")

	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	e.scanNow()
	e.wantProblem("gw.yaml", "its symlink leads nowhere")
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("delete Gateway default/gw")
	e.wantProblem("gw.yaml", "its symlink leads nowhere")
}

func errorsText(errs []*config.Error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}
