package file

import (
	"io/fs"
	"os"
	"time"
)

// statMargin is how long before a read a file's timestamps must be for
// its stat to stand for its content. File timestamps come from a coarse
// kernel clock, so a write landing in the same tick as an earlier read
// can leave mtime and ctime unchanged; a file touched that recently is
// read again, as git treats "racily clean" entries. The margin depends on
// the file system's timestamp resolution, judged from the timestamps
// themselves: whole seconds (FAT, ext3, HFS+, some network file systems)
// take coarseStatMargin; sub-second ones (ext4, xfs, btrfs, tmpfs and
// overlayfs tick with the kernel's clock, at most 10 ms) take
// fineStatMargin, ten times that tick.
var (
	coarseStatMargin = 2 * time.Second
	fineStatMargin   = 100 * time.Millisecond
)

// statMargin is the margin for a file stamped with mtime and ctime: a
// whole-second timestamp (one in a billion on a fine file system) is
// taken as coarse.
func statMargin(mtime, ctime time.Time) time.Duration {
	if mtime.Nanosecond() == 0 || ctime.Nanosecond() == 0 {
		return coarseStatMargin
	}
	return fineStatMargin
}

// statStamp is what a file's metadata looked like just before the read
// whose content a fileState holds. A rescan that finds the same stamp
// skips reading and hashing the file: at 5,000 files that is most of a
// rescan's cost.
type statStamp struct {
	info fs.FileInfo
	// ctime is the inode change time (zero where the platform does not
	// give it, which makes the stamp never stand for the content).
	ctime time.Time
	// readAt is when the content was read (the real clock: it is compared
	// with the file system's timestamps, not with the injected clock).
	readAt time.Time
}

// stampFile stats p (following symlinks, so a ConfigMap volume's swapped
// target counts as a different file) before it is read.
func stampFile(p string) (statStamp, bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return statStamp{}, false
	}
	return statStamp{info: fi, ctime: changeTime(fi), readAt: time.Now()}, true
}

// unchanged reports whether cur shows the same file, untouched since the
// read that prev stamped.
func (prev statStamp) unchanged(cur statStamp) bool {
	if prev.info == nil || cur.info == nil || prev.ctime.IsZero() {
		return false
	}
	settled := prev.readAt.Add(-statMargin(prev.info.ModTime(), prev.ctime))
	return os.SameFile(prev.info, cur.info) &&
		prev.info.Size() == cur.info.Size() &&
		prev.info.ModTime().Equal(cur.info.ModTime()) &&
		prev.ctime.Equal(cur.ctime) &&
		prev.info.ModTime().Before(settled) && prev.ctime.Before(settled)
}
