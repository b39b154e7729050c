package file

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// fileState is what one file currently contributes.
type fileState struct {
	// sum is the hash of the content last read, so an unchanged file is
	// not parsed again.
	sum [sha256.Size]byte
	// objects are the file's effective objects in document order: those
	// that parsed and validated, or their last good versions.
	objects []config.Config
	// errs are the file's own problems (read, parse, validation).
	errs []*config.Error
}

// rescan re-reads the directory, recomputes the store and queues an event
// for each object that changed. Unchanged files are not parsed again.
func (c *Controller) rescan() {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()

	paths, unreadable, problems := c.walk()
	files := make(map[string]*fileState, len(paths))
	for _, p := range paths {
		if st := c.load(p); st != nil {
			files[p] = st
		}
	}
	// A directory we could not list hides its files; keep what they held
	// rather than deleting config because of, say, a permission glitch.
	for p, st := range c.files {
		if _, ok := files[p]; !ok && slices.ContainsFunc(unreadable, func(dir string) bool { return within(p, dir) }) {
			files[p] = st
		}
	}
	c.files = files

	objects, fileProblems := resolve(files)
	problems = append(problems, fileProblems...)
	sortErrors(problems)

	c.mu.Lock()
	old := c.objects
	c.objects = objects
	c.index = memory.New(slices.Collect(maps.Values(objects)))
	c.errs = problems
	c.mu.Unlock()

	// Log before queueing, so whoever sees an event of this scan also sees
	// its warnings.
	c.logNewProblems(problems)
	for _, ch := range diff(old, objects) {
		if !ch.silent {
			c.log.Debug("config changed", "event", ch.event.String(), "key", ch.cur.Key().String(), "source", ch.cur.Source)
		}
		c.queue.Push(c.deliver(ch))
	}
}

// walk lists the config files under Dir, sorted. It also returns the
// directories it could not read, and a problem for each.
func (c *Controller) walk() (paths, unreadable []string, problems []*config.Error) {
	root := c.opts.Dir
	walkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			unreadable = append(unreadable, p)
			problems = append(problems, &config.Error{Source: p, Message: "cannot read: " + err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		if ignored(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !isConfigFile(d.Name()) {
			return nil
		}
		// Follow symlinks to files (Kubernetes ConfigMap volumes are made
		// of them) but not to directories, which could loop.
		if d.Type()&fs.ModeSymlink != 0 {
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	slices.Sort(paths)
	return paths, unreadable, problems
}

// walkDir is filepath.WalkDir, except that a root that is a symlink to a
// directory is followed. fn sees root as given and paths joined to it.
func walkDir(root string, fn fs.WalkDirFunc) {
	if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A trailing separator makes the kernel resolve the link.
		withSep := root + string(filepath.Separator)
		_ = filepath.WalkDir(withSep, func(p string, d fs.DirEntry, err error) error {
			if p == withSep {
				p = root
			}
			return fn(p, d, err)
		})
		return
	}
	_ = filepath.WalkDir(root, fn)
}

// ignored reports names never read: hidden files and directories (which
// include Emacs lock files and the timestamped directories of ConfigMap
// volumes) and editor backups and swap files.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") ||
		strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".swx")
}

func isConfigFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// load returns the new state of file p, or nil if it no longer exists.
func (c *Controller) load(p string) *fileState {
	prev := c.files[p]
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		st := &fileState{errs: []*config.Error{{Source: p, Message: "cannot read file: " + err.Error()}}}
		if prev != nil {
			st.objects = prev.objects
		}
		return st
	}
	sum := sha256.Sum256(data)
	if prev != nil && prev.sum == sum {
		return prev
	}
	return c.parse(p, data, sum, prev)
}

// parse turns the content of p into its state. A file with any document
// that does not parse keeps the objects it had, since a half-saved file
// must not delete config; the first time a file is seen there is nothing
// to keep, so the documents that did parse are used. An object that fails
// validation keeps its last good version from this file, if any.
func (c *Controller) parse(p string, data []byte, sum [sha256.Size]byte, prev *fileState) *fileState {
	objs, parseErrs := manifest.Parse(p, data, c.opts.Parse)
	st := &fileState{sum: sum, errs: parseErrs}
	keepPrev := len(parseErrs) > 0 && prev != nil
	lastGood := map[config.Key]config.Config{}
	if prev != nil {
		for _, obj := range prev.objects {
			lastGood[obj.Key()] = obj
		}
	}
	for _, obj := range objs {
		// Validate even when the file's objects are held back, so every
		// problem in the file shows at once.
		if err := c.check(obj); err != nil {
			st.errs = append(st.errs, config.ErrorsFor(obj.Source, obj.Key(), err)...)
			good, ok := lastGood[obj.Key()]
			if !ok {
				continue
			}
			obj = good
		}
		if !keepPrev {
			st.objects = append(st.objects, obj)
		}
	}
	if keepPrev {
		st.objects = prev.objects
	}
	return st
}

// check validates obj; a validator panic rejects the object instead of
// taking the control plane down.
func (c *Controller) check(obj config.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validation failed unexpectedly: %v", r)
		}
	}()
	return c.validate(obj)
}

// resolve merges the files into one store: files in path order, documents
// in order, the first definition of a key wins and later ones are reported
// as duplicates.
func resolve(files map[string]*fileState) (map[config.Key]config.Config, []*config.Error) {
	objects := map[config.Key]config.Config{}
	var problems []*config.Error
	for _, p := range slices.Sorted(maps.Keys(files)) {
		st := files[p]
		problems = append(problems, st.errs...)
		for _, obj := range st.objects {
			key := obj.Key()
			if first, dup := objects[key]; dup {
				problems = append(problems, &config.Error{
					Source:  obj.Source,
					Key:     key,
					Message: fmt.Sprintf("duplicate of the definition in %s, which is used; this one is ignored", first.Source),
				})
				continue
			}
			objects[key] = obj
		}
	}
	return objects, problems
}
