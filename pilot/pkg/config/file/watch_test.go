package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// watchedEnv runs a controller whose periodic rescan never comes within a
// test: whatever it sees, the watcher told it.
func watchedEnv(t *testing.T, dir string, files map[string]string, initial ...string) (*env, *recorder) {
	t.Helper()
	e := newEnv(t, files, func(o *Options) {
		o.RescanInterval = time.Hour
		if dir != "" {
			o.Dir = dir
		}
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	rec.expect(initial...)
	return e, rec
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// swapLink points link at target atomically, as Kubernetes does with a
// ConfigMap volume's ..data: a new link renamed over the old one.
func swapLink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	symlink(t, target, tmp)
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A folder deleted and made again is watched again at once: a file written
// into it later is seen without waiting for the periodic rescan.
func TestRecreatedFolderIsWatched(t *testing.T) {
	e, rec := watchedEnv(t, "", map[string]string{"sub/a.yaml": gateway("default", "gw", 80)}, "add Gateway default/gw")
	e.remove("sub")
	e.write("sub/a.yaml", gateway("default", "gw", 81))
	rec.expect("update Gateway default/gw")
	e.write("sub/b.yaml", virtualService("default", "vs", "a.example.com"))
	rec.expect("add VirtualService default/vs")
}

// A directory made inside a new one between the walk that found the new
// one and the watch that went on it raised its event before anything
// watched: it is watched all the same, and a file written into it later
// is seen without waiting for the periodic rescan.
func TestDirectoryMadeWhileWatchesGoInIsWatched(t *testing.T) {
	var made atomic.Bool
	var e *env
	e = newEnv(t, nil, func(o *Options) {
		o.RescanInterval = time.Hour
		o.walked = func(dirs []string) {
			if slices.Contains(dirs, e.path("new")) && made.CompareAndSwap(false, true) {
				if err := os.Mkdir(e.path("new/deeper"), 0o755); err != nil {
					t.Error(err)
				}
			}
		}
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	// Wait for the first refresh's scan, then forget it.
	e.waitScan()
	e.drainScans()
	if err := os.Mkdir(e.path("new"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The refresh that saw "new" made "new/deeper" and then scanned. A
	// scan of an earlier event (a change of mode counts) may come first;
	// each wait fails after the harness's timeout.
	for i := 0; !made.Load(); i++ {
		if i == 10 {
			t.Fatal("ten scans after making new, none followed a walk that found it")
		}
		e.waitScan()
	}
	e.write("new/deeper/gw.yaml", gateway("default", "gw", 80))
	rec.expect("add Gateway default/gw")
}

// A symlinked folder whose link is replaced is read and watched through
// the new link at once.
func TestReplacedSymlinkedFolderIsWatched(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "v1", "gw.yaml"), gateway("default", "gw", 80))
	root := t.TempDir()
	symlink(t, filepath.Join(outside, "v1"), filepath.Join(root, "team"))
	_, rec := watchedEnv(t, root, nil, "add Gateway default/gw")

	writeFile(t, filepath.Join(outside, "v2", "gw.yaml"), gateway("default", "gw", 81))
	swapLink(t, filepath.Join(outside, "v2"), filepath.Join(root, "team"))
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("port = %d, want 81", gatewayPort(t, &ev.cur))
	}
	writeFile(t, filepath.Join(outside, "v2", "vs.yaml"), virtualService("default", "vs", "a.example.com"))
	rec.expect("add VirtualService default/vs")
}

// A config folder that is itself a symlink, replaced: its parent's watch
// sees the swap, and the new target is watched.
func TestReplacedConfigDirLinkIsWatched(t *testing.T) {
	base := t.TempDir()
	writeFile(t, filepath.Join(base, "v1", "gw.yaml"), gateway("default", "gw", 80))
	dir := filepath.Join(base, "config")
	symlink(t, filepath.Join(base, "v1"), dir)
	_, rec := watchedEnv(t, dir, nil, "add Gateway default/gw")

	writeFile(t, filepath.Join(base, "v2", "gw.yaml"), gateway("default", "gw", 81))
	swapLink(t, filepath.Join(base, "v2"), dir)
	rec.expect("update Gateway default/gw")
	writeFile(t, filepath.Join(base, "v2", "vs.yaml"), virtualService("default", "vs", "a.example.com"))
	rec.expect("add VirtualService default/vs")
}

// configMapVolume lays out a folder as Kubernetes mounts a ConfigMap:
// gw.yaml (Gateway default/gw, port 80) is a link through the ..data link
// to the timestamped folder ..2025_01.
func configMapVolume(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "..2025_01", "gw.yaml"), gateway("default", "gw", 80))
	symlink(t, "..2025_01", filepath.Join(root, "..data"))
	symlink(t, filepath.Join("..data", "gw.yaml"), filepath.Join(root, "gw.yaml"))
	return root
}

// A ConfigMap volume update: new timestamped folder, ..data swapped to it,
// old folder removed. The visible names never dangle for long enough to
// lose config, and the update is seen at once.
func TestConfigMapDataSwap(t *testing.T) {
	root := configMapVolume(t)
	_, rec := watchedEnv(t, root, nil, "add Gateway default/gw")

	writeFile(t, filepath.Join(root, "..2025_02", "gw.yaml"), gateway("default", "gw", 81))
	swapLink(t, "..2025_02", filepath.Join(root, "..data"))
	if err := os.RemoveAll(filepath.Join(root, "..2025_01")); err != nil {
		t.Fatal(err)
	}
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("port = %d, want 81", gatewayPort(t, &ev.cur))
	}
}

// Symlink loops are reported naming the link and are not followed; the
// rest of the folder is served, and creating a loop later is reported too.
func TestSymlinkLoopsReported(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "sub", "gw.yaml"), gateway("default", "gw", 80))
	symlink(t, root, filepath.Join(root, "sub", "up"))
	symlink(t, "self.yaml", filepath.Join(root, "self.yaml"))
	e, rec := watchedEnv(t, root, nil, "add Gateway default/gw")

	hasLoop := func(errs []*config.Error, path string) bool {
		return slices.ContainsFunc(errs, func(ce *config.Error) bool {
			return ce.Source == path && strings.Contains(ce.Message, "symlink loop")
		})
	}
	errs := e.c.ConfigErrors()
	if !hasLoop(errs, filepath.Join(root, "sub", "up")) || !hasLoop(errs, filepath.Join(root, "self.yaml")) {
		t.Fatalf("ConfigErrors = %v, want both loops named", errs)
	}
	if !strings.Contains(errs[0].Error()+errs[1].Error(), root) {
		t.Fatalf("loop reports do not name the path: %v", errs)
	}

	symlink(t, filepath.Join(root, "sub"), filepath.Join(root, "sub", "again"))
	writeFile(t, filepath.Join(root, "zzz.yaml"), virtualService("default", "vs", "a.example.com"))
	rec.expect("add VirtualService default/vs")
	if !hasLoop(e.c.ConfigErrors(), filepath.Join(root, "sub", "again")) {
		t.Fatalf("ConfigErrors = %v, want the new loop named", e.c.ConfigErrors())
	}
}
