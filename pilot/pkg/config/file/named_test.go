package file

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
)

// scanCounts reads how many scans walked the tree and how many read only
// the files events named.
func (e *env) scanCounts() (walked, named int) {
	e.c.scanMu.Lock()
	defer e.c.scanMu.Unlock()
	return e.c.scans.walked, e.c.scans.named
}

// startupWalks waits for Run's first refresh to have walked the tree (New
// walked it once before) and returns the count.
func (e *env) startupWalks() int {
	e.t.Helper()
	var walked int
	poll.Until(e.t, "Run's first refresh to walk the tree", func() bool {
		walked, _ = e.scanCounts()
		return walked >= 2
	}, poll.Timeout(timeout), poll.Interval(time.Millisecond))
	return walked
}

// An edit, a new file and a removed file are each taken in by reading the
// file the events named: no scan walks the tree (and stats every file).
func TestFileEventsReadTheNamedFilesAlone(t *testing.T) {
	e, rec := watchedEnv(t, "", map[string]string{
		"a.yaml":     virtualService("default", "a", "a.example.com"),
		"sub/b.yaml": virtualService("default", "b", "b.example.com"),
	}, "add VirtualService default/a", "add VirtualService default/b")
	walked := e.startupWalks()

	e.write("a.yaml", virtualService("default", "a", "a2.example.com")) // a hidden temp file renamed over it
	rec.expect("update VirtualService default/a")
	e.write("sub/c.yaml", virtualService("default", "c", "c.example.com"))
	rec.expect("add VirtualService default/c")
	e.remove("sub/b.yaml")
	rec.expect("delete VirtualService default/b")
	// Files never read raise events too; they read nothing.
	if err := os.WriteFile(e.path("notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.barrier(rec, 0)

	nowWalked, named := e.scanCounts()
	if nowWalked != walked {
		t.Errorf("%d scans walked the tree for file events, want none", nowWalked-walked)
	}
	if named == 0 {
		t.Error("no scan read named files")
	}
	if got := e.c.Get(schema.VirtualService, "default", "a"); got == nil {
		t.Fatal("default/a is gone")
	}
}

// A directory made is walked (and watched) before its files are read.
func TestNewDirectoryWalksTheTree(t *testing.T) {
	e, rec := watchedEnv(t, "", map[string]string{"a.yaml": virtualService("default", "a", "a.example.com")}, "add VirtualService default/a")
	walked := e.startupWalks()
	e.write("new/deeper/b.yaml", virtualService("default", "b", "b.example.com"))
	rec.expect("add VirtualService default/b")
	if now, _ := e.scanCounts(); now == walked {
		t.Error("no scan walked the tree after a directory was made")
	}
	// The new directory is watched: an edit in it is seen.
	e.write("new/deeper/b.yaml", virtualService("default", "b", "b2.example.com"))
	rec.expect("update VirtualService default/b")
}

// A folder with symlinks in it is walked when an entry that is not a
// config file goes: a link may have led through it.
func TestGoneEntryWalksWhenLinksLeadThrough(t *testing.T) {
	root := configMapVolume(t)
	e, rec := watchedEnv(t, root, nil, "add Gateway default/gw")

	// ..data removed: the only event names a hidden entry that is gone.
	if err := os.Remove(filepath.Join(root, "..data")); err != nil {
		t.Fatal(err)
	}
	e.c.scanMu.Lock()
	_, ok := e.c.named(map[string]struct{}{filepath.Join(root, "..data"): {}})
	e.c.scanMu.Unlock()
	if ok {
		t.Fatal("a gone hidden entry in a folder with links was read by name alone")
	}
	// Its link now dangles: after the settle window, the Gateway goes.
	rec.expect("delete Gateway default/gw")
}

// What each kind of event path asks for, in a folder without links.
func TestNamedSortsEventPaths(t *testing.T) {
	e := newEnv(t, map[string]string{"a.yaml": virtualService("default", "a", "a.example.com")}, nil)
	e.c.scan(true)
	e.c.watchMu.Lock()
	e.c.watched[e.dir] = nil
	e.c.watchMu.Unlock()
	if err := os.Mkdir(e.path(".hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "a.yaml", e.path("link.yaml"))
	for _, name := range []string{".tmp-b.yaml", "b.yaml", "b.txt", "b.yaml~"} {
		if err := os.WriteFile(e.path(name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		paths []string
		read  []string // nil with ok false: walk the tree
		ok    bool
	}{
		{paths: []string{"a.yaml"}, read: []string{"a.yaml"}, ok: true},
		{paths: []string{"b.yaml", ".tmp-b.yaml", "b.txt", "b.yaml~"}, read: []string{"b.yaml"}, ok: true},
		{paths: []string{".tmp-gone.yaml"}, ok: true}, // never read, and gone
		{paths: []string{"gone.yaml"}, ok: true},      // never read either
		{paths: []string{".hidden"}, ok: true},        // a hidden directory, no links
		{paths: []string{"sub"}},                      // a directory to watch
		{paths: []string{"link.yaml"}},                // a link to follow
		{paths: []string{"a.yaml", "sub"}},            // one is enough
		{paths: []string{"elsewhere/x.yaml"}},         // not in a watched directory
		{paths: []string{"."}},                        // the folder itself
	} {
		in := map[string]struct{}{}
		for _, p := range tc.paths {
			in[e.path(p)] = struct{}{}
		}
		read, ok := e.c.named(in)
		var want []string
		for _, p := range tc.read {
			want = append(want, e.path(p))
		}
		slices.Sort(read)
		if ok != tc.ok || !slices.Equal(read, want) {
			t.Errorf("named(%v) = %v, %v; want %v, %v", tc.paths, read, ok, want, tc.ok)
		}
	}
	// A removed config file the controller holds is read (to drop it).
	e.remove("a.yaml")
	if read, ok := e.c.named(map[string]struct{}{e.path("a.yaml"): {}}); !ok || len(read) != 1 {
		t.Errorf("removed a.yaml: named = %v, %v; want it read", read, ok)
	}
}

func TestMergeEvents(t *testing.T) {
	a := mergeEvents(eventAt("/x/a.yaml"), eventAt("/x/b.yaml"))
	if a.all || !slices.Equal(slices.Sorted(maps.Keys(a.paths)), []string{"/x/a.yaml", "/x/b.yaml"}) {
		t.Errorf("merged = %+v", a)
	}
	if !mergeEvents(a, readAll).all || !mergeEvents(readAll, eventAt("/x/c.yaml")).all {
		t.Error("a batch that asks for everything did not stay so")
	}
}
