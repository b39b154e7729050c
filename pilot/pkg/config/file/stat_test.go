package file

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestStatStamp checks when a rescan may skip reading a file: only when
// the same inode, size, mtime and ctime were stamped before a read made
// well after the file's last change.
func TestStatStamp(t *testing.T) {
	t.Run("margin", func(t *testing.T) {
		sec := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
		fine := sec.Add(123456789)
		if statMargin(sec, sec) != coarseStatMargin || statMargin(fine, sec) != coarseStatMargin || statMargin(sec, fine) != coarseStatMargin {
			t.Error("whole-second timestamps did not take the coarse margin")
		}
		if statMargin(fine, fine) != fineStatMargin {
			t.Error("sub-second timestamps did not take the fine margin")
		}
	})

	if runtime.GOOS != "linux" {
		t.Skip("the inode change time is read on Linux only")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "a.yaml")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func() statStamp {
		t.Helper()
		s, ok := stampFile(p)
		if !ok {
			t.Fatalf("stat %s failed", p)
		}
		return s
	}
	write(p, "kind: one\n")

	// Read right after the write: the timestamps may not have ticked yet,
	// so an in-place rewrite of the same size must still be read.
	racy := stamp()
	write(p, "kind: two\n")
	if racy.unchanged(stamp()) {
		t.Fatal("a file changed in place right after its read was taken as unchanged")
	}

	// A read made long after the last change (as if the file were old).
	old := stamp()
	old.readAt = old.readAt.Add(time.Hour)
	if !old.unchanged(stamp()) {
		t.Fatal("an untouched file was not taken as unchanged")
	}

	write(p, "kind: three\n") // in place, another size
	if old.unchanged(stamp()) {
		t.Fatal("a file rewritten with another size was taken as unchanged")
	}

	old = stamp()
	old.readAt = old.readAt.Add(time.Hour)
	tmp := filepath.Join(dir, ".a.yaml.tmp")
	write(tmp, "kind: four\n") // same size, replaced atomically
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if old.unchanged(stamp()) {
		t.Fatal("a file replaced by a rename (new inode) was taken as unchanged")
	}

	// A read made just past the fine margin after the last change: the
	// file system here has sub-second timestamps, so the stamp stands.
	old = stamp()
	if got := statMargin(old.info.ModTime(), old.ctime); got != fineStatMargin {
		t.Skipf("this file system's timestamps look coarse (margin %v)", got)
	}
	old.readAt = old.info.ModTime().Add(fineStatMargin + time.Millisecond)
	if !old.unchanged(stamp()) {
		t.Fatal("a file untouched for longer than the fine margin was not taken as unchanged")
	}
	old.readAt = old.info.ModTime().Add(fineStatMargin / 2)
	if old.unchanged(stamp()) {
		t.Fatal("a file read within the margin of its change was taken as unchanged")
	}

	if (statStamp{}).unchanged(stamp()) {
		t.Fatal("the zero stamp matched a file")
	}
}
