package file

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// A rescan walks the whole tree and stats every file: about 4 ms at 1,000
// files and 21 ms at 5,000 (BenchmarkOneFileChange), paid for every edit.
// A batch of watcher events that names only config files (written,
// created, renamed or removed in a directory already watched) is taken in
// by reading those files alone, with those whose change is pending: any
// other file that changes raises an event of its own, and a lost event
// (the watcher's queue overflowing) asks for everything. Whatever the
// names alone cannot vouch for (a directory or a symlink made or removed,
// the folder itself, a name not in a watched directory) reads everything,
// as before; so does the periodic rescan.

// events is what a run of watcher events asks to have read: the paths
// they named, or everything.
type events struct {
	all   bool
	paths map[string]struct{}
}

// readAll asks for the whole tree.
var readAll = events{all: true}

// eventAt is one event's ask.
func eventAt(p string) events { return events{paths: map[string]struct{}{p: {}}} }

// mergeEvents is the debouncer's merge: a's paths are its own (each event
// brings a new map), so they are added to in place.
func mergeEvents(a, b events) events {
	if a.all || b.all {
		return readAll
	}
	for p := range b.paths {
		a.paths[p] = struct{}{}
	}
	return a
}

// rescanNamed takes in the files named by a batch of events, and those
// with a change pending, when the names are enough to know what changed
// (see named); otherwise it reads nothing and reports false.
func (c *Controller) rescanNamed(paths map[string]struct{}) bool {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	read, ok := c.named(paths)
	if !ok {
		return false
	}
	c.scans.named++
	c.loadPaths(read, true)
	return true
}

// named returns the config files among paths to read, or false when what
// a path names may change more than that file: then the whole tree must
// be walked. Files whose names are never read (hidden ones, such as the
// temporary file an atomic write renames into place, editor backups,
// other extensions) are passed over. Must be called with scanMu held.
func (c *Controller) named(paths map[string]struct{}) ([]string, bool) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	var read []string
	for p := range paths {
		if p == c.opts.Dir {
			return nil, false
		}
		if _, ok := c.watched[filepath.Dir(p)]; !ok {
			return nil, false
		}
		name := filepath.Base(p)
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			if !Ignored(name) && IsConfigFile(name) {
				read = append(read, p)
			}
		case err == nil && fi.IsDir() && Ignored(name) && !c.walkLinks:
			// A hidden directory is never read, and no link leads into it.
		case err == nil:
			return nil, false // a directory to watch, a link to follow
		case errors.Is(err, fs.ErrNotExist):
			if _, ok := c.files[p]; ok {
				read = append(read, p) // removed or renamed away
				continue
			}
			if _, ok := c.watched[p]; ok || c.walkLinks {
				// A directory went, or something a link led through may
				// have (a ConfigMap volume's ..data).
				return nil, false
			}
			// Never read: a temporary file renamed into place, say.
		default:
			return nil, false
		}
	}
	return read, true
}
