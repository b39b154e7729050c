package meshwatch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// fileEnv is a FileWatcher on a temp file, its debounce on a fake clock.
type fileEnv struct {
	path    string
	w       *FileWatcher
	tracker *Tracker
	clk     *clocktesting.FakeClock
	changes atomic.Int32
}

func newFileEnv(t *testing.T, path, content string) (*fileEnv, error) {
	t.Helper()
	if content != "" {
		writeAtomic(t, path, content)
	}
	e := &fileEnv{path: path, clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	h := mesh.NewHolder(mesh.HolderOptions{OnChange: func(_, _ *mesh.Config) { e.changes.Add(1) }})
	e.tracker = NewTracker(h, nil, e.clk.Now)
	w, err := NewFile(FileOptions{Path: path, Tracker: e.tracker, Clock: e.clk})
	e.w = w
	e.changes.Store(0) // the start's change from istiod's defaults
	return e, err
}

// run runs the watcher until the test ends.
func (e *fileEnv) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// until steps the debounce's clock until cond holds.
func (e *fileEnv) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, func() bool {
		e.clk.Step(DefaultFileDebounce)
		return cond()
	})
}

func (e *fileEnv) root() string { return e.tracker.Current().Mesh.GetRootNamespace() }

// writeAtomic writes content to path by renaming a temp file over it, as
// editors and config tools do.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestFileReadAtStart(t *testing.T) {
	e, err := newFileEnv(t, filepath.Join(t.TempDir(), "mesh"), "rootNamespace: first\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.root(); got != "first" {
		t.Fatalf("rootNamespace = %q, want first", got)
	}
	if got := e.tracker.Current().Source; got != mesh.FileSource(e.path) {
		t.Fatalf("source = %v", got)
	}
}

func TestFileBadAtStartFailsWithFileAndField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh")
	_, err := newFileEnv(t, path, "accessLogEncoding: XML\n")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "accessLogEncoding") {
		t.Fatalf("err = %v, want one naming %s and accessLogEncoding", err, path)
	}
	_, err = newFileEnv(t, filepath.Join(t.TempDir(), "missing"), "")
	if err == nil || !strings.Contains(err.Error(), "--mesh-config") {
		t.Fatalf("missing file: err = %v", err)
	}
}

func TestFileChangeIsReadAndBadUpdateKeepsLastGood(t *testing.T) {
	e, err := newFileEnv(t, filepath.Join(t.TempDir(), "mesh"), "rootNamespace: first\n")
	if err != nil {
		t.Fatal(err)
	}
	e.run(t)
	writeAtomic(t, e.path, "rootNamespace: second\n")
	e.until(t, "the new rootNamespace", func() bool { return e.root() == "second" })
	if n := e.changes.Load(); n != 1 {
		t.Fatalf("OnChange calls = %d, want 1", n)
	}

	writeAtomic(t, e.path, "rootNamespace: third\nenableTracing: maybe\n")
	e.until(t, "the refusal", func() bool { return e.tracker.LastError() != nil })
	le := e.tracker.LastError()
	if !strings.Contains(le.Err.Error(), e.path) || !strings.Contains(le.Err.Error(), "enableTracing") || le.Source != mesh.FileSource(e.path) {
		t.Fatalf("last error = %v (source %v), want the file and the field", le.Err, le.Source)
	}
	if got := e.root(); got != "second" {
		t.Fatalf("after a bad file rootNamespace = %q, want the last good second", got)
	}
	if e.tracker.Rejected() != 1 {
		t.Fatalf("rejected = %d, want 1", e.tracker.Rejected())
	}

	writeAtomic(t, e.path, "rootNamespace: fourth\n")
	// The Holder takes the config before the Tracker clears the error, so
	// both are awaited: the good file in force and the refusal forgotten.
	e.until(t, "the good file after the bad, its error cleared", func() bool {
		return e.root() == "fourth" && e.tracker.LastError() == nil
	})
	if e.tracker.Rejected() != 1 {
		t.Fatalf("rejected after a good file = %d, want still 1", e.tracker.Rejected())
	}
}

// A ConfigMap volume: the file is a symlink through ..data, which the
// kubelet swaps to a new directory; the file itself is never written.
func TestFileConfigMapVolumeSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	for v, content := range map[string]string{"..v1": "rootNamespace: one\n", "..v2": "rootNamespace: two\n"} {
		if err := os.Mkdir(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, v, "mesh"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("..v1", filepath.Join(dir, "..data")))
	must(os.Symlink("..data/mesh", filepath.Join(dir, "mesh")))
	e, err := newFileEnv(t, filepath.Join(dir, "mesh"), "")
	must(err)
	if e.root() != "one" {
		t.Fatalf("rootNamespace = %q, want one", e.root())
	}
	e.run(t)
	must(os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	must(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	e.until(t, "the swapped content", func() bool { return e.root() == "two" })
}

func TestFileUnreadableKeepsLastContent(t *testing.T) {
	e, err := newFileEnv(t, filepath.Join(t.TempDir(), "mesh"), "rootNamespace: first\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.path); err != nil {
		t.Fatal(err)
	}
	e.w.Reload()
	if e.root() != "first" || e.tracker.LastError() == nil || e.tracker.Rejected() != 1 {
		t.Fatalf("after removal: root %q, last error %v, rejected %d; want first kept, an error, 1",
			e.root(), e.tracker.LastError(), e.tracker.Rejected())
	}
	// The same content back: nothing to load, and the error is over.
	writeAtomic(t, e.path, "rootNamespace: first\n")
	e.w.Reload()
	if e.tracker.LastError() != nil || e.changes.Load() != 0 {
		t.Fatalf("same content back: last error %v, changes %d; want none", e.tracker.LastError(), e.changes.Load())
	}
}

func TestFileUnchangedContentIsNotLoadedAgain(t *testing.T) {
	e, err := newFileEnv(t, filepath.Join(t.TempDir(), "mesh"), "rootNamespace: first\n")
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, e.path, "rootNamespace: [\n")
	e.w.Reload()
	e.w.Reload() // the same bad content: refused once, not counted again
	if e.tracker.Rejected() != 1 || e.tracker.LastError() == nil {
		t.Fatalf("rejected %d, last error %v; want 1 and the error standing", e.tracker.Rejected(), e.tracker.LastError())
	}
}
