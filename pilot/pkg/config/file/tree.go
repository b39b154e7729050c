package file

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

// maxDepth bounds how deep symlinked directories are followed, so links
// that fan out without looping still cannot make a walk run away.
const maxDepth = 64

// tree is one walk of the config directory.
type tree struct {
	// files are the config files, sorted.
	files []string
	// dirs are the directories read, root first; a symlinked directory is
	// listed under its link's path.
	dirs []string
	// unreadable are directories that could not be listed, and
	// config-named entries that are not regular files; their files keep
	// what they held.
	unreadable []string
	problems   []*config.Error
	// links marks a tree with a symlink in it (to a file or a directory,
	// under a name read or not): what a config file holds may then change
	// through an entry that is not itself one (see named).
	links bool
}

// walkTree lists the config files under root. Symlinks are followed, to
// files (Kubernetes ConfigMap volumes are made of them) and to directories
// (a folder linked in from elsewhere, or swapped by replacing its link);
// a link leading back to a directory it is inside is a loop, reported and
// not followed.
func walkTree(root string) tree {
	var t tree
	t.visit(root, nil, nil)
	slices.Sort(t.files)
	return t
}

// visit reads dir; ancestors are the directories it is inside, with their
// paths, for loop detection.
func (t *tree) visit(dir string, ancestors []os.FileInfo, paths []string) {
	info, err := os.Stat(dir)
	if err == nil && !info.IsDir() {
		err = errors.New("not a directory")
	}
	var entries []fs.DirEntry
	if err == nil {
		entries, err = os.ReadDir(dir)
	}
	if err != nil {
		t.unreadable = append(t.unreadable, dir)
		t.problems = append(t.problems, &config.Error{Source: dir, Message: "cannot read: " + err.Error()})
		return
	}
	t.dirs = append(t.dirs, dir)
	ancestors = append(ancestors, info)
	paths = append(paths, dir)
	for _, d := range entries {
		if Ignored(d.Name()) {
			t.links = t.links || d.Type()&fs.ModeSymlink != 0
			continue
		}
		p := filepath.Join(dir, d.Name())
		mode := d.Type()
		if mode&fs.ModeSymlink != 0 {
			t.links = true
			st, err := os.Stat(p)
			if errors.Is(err, syscall.ELOOP) {
				t.problems = append(t.problems, &config.Error{Source: p, Message: "symlink loop: the link resolves to itself; not followed"})
				continue
			}
			if err != nil {
				// Dangling, as a ConfigMap update leaves it for a moment:
				// what the file held is gone, and said so.
				if IsConfigFile(d.Name()) {
					t.problems = append(t.problems, &config.Error{Source: p, Message: "cannot read file: its symlink leads nowhere (" + errText(err) + "); anything it held is removed"})
				}
				continue
			}
			mode = st.Mode().Type()
			if st.IsDir() {
				if i := slices.IndexFunc(ancestors, func(a os.FileInfo) bool { return os.SameFile(a, st) }); i >= 0 {
					t.problems = append(t.problems, &config.Error{Source: p, Message: "symlink loop: the link points back to " + paths[i] + ", which contains it; not followed"})
					continue
				}
			}
		}
		switch {
		case mode.IsDir():
			if len(ancestors) >= maxDepth {
				t.problems = append(t.problems, &config.Error{Source: p, Message: "directory nested too deeply through symlinks; not read"})
				continue
			}
			t.visit(p, ancestors, paths)
		case mode.IsRegular() && IsConfigFile(d.Name()):
			t.files = append(t.files, p)
		case IsConfigFile(d.Name()):
			// A FIFO, socket or device: not read (a FIFO would block
			// the scan), and, like an unreadable folder, keeping what it
			// held.
			t.unreadable = append(t.unreadable, p)
			t.problems = append(t.problems, &config.Error{Source: p, Message: notRegular(mode) + "; serving the objects it last held"})
		}
	}
}

// Ignored reports names never read: hidden files and directories (which
// include Emacs lock files and the timestamped directories of ConfigMap
// volumes) and editor backups and swap files.
func Ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") ||
		strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".swx")
}

// IsConfigFile reports the names read: YAML and JSON.
func IsConfigFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// dangling reports whether p is a symlink that leads nowhere.
func dangling(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return false
	}
	_, err = os.Stat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// errText is err without the path, which the problem names already.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
