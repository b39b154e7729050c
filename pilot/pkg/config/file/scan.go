package file

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
)

// fileState is what one file currently contributes.
type fileState struct {
	// sum is the hash of the content last accepted, so an unchanged file
	// is not parsed again.
	sum [sha256.Size]byte
	// objects are the file's effective objects in document order: those
	// that parsed and validated, or their last good versions.
	objects []config.Config
	// gateway holds the file's Gateway API objects (see gatewayapi.go).
	gateway gatewayFileState
	// errs are the file's own problems (read, parse, validation).
	errs []*config.Error
	// seen is when each of the file's keys was first seen in it: the
	// order in which conflicting definitions are served, and the creation
	// time of objects whose manifest does not give one.
	seen stamps
	// stat is the file's metadata just before the read of the content
	// accepted (see stat.go); the zero value never matches.
	stat statStamp
	// pending is a change seen but not yet accepted (see settle.go).
	pending *pendingChange
	// fresh marks a state parsed by this scan, whose objects still need
	// their first-seen stamps.
	fresh bool
	// empty marks content with no documents at all.
	empty bool
	// good, when set, is the state this one holds on to: the file cannot
	// be read now (unreadable.go), and serves good's objects meanwhile.
	good *fileState
}

// rescan re-reads the directory, recomputes the store and queues an event
// for each object that changed. Unchanged files are not parsed again; a
// changed or removed file is taken in once it has settled.
func (c *Controller) rescan() { c.scan(false) }

// scan is rescan; initial takes every file as it is, with no settling:
// at startup there is nothing served that a half-written file could take
// away.
func (c *Controller) scan(initial bool) {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()

	now := c.clock.Now()
	c.scanStamp = time.Time{}
	t := walkTree(c.opts.Dir)
	c.walkLinks = t.links
	c.scans.walked++
	var wake time.Time
	files := make(map[string]*fileState, len(t.files))
	for _, p := range t.files {
		st, at := c.load(p, now, initial)
		if st != nil {
			files[p] = st
		}
		wake = earliest(wake, at)
	}
	var missing []string
	for p := range c.files {
		if _, ok := files[p]; !ok {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		st := c.files[p]
		// A directory we could not list hides its files; keep what they
		// held rather than deleting config because of, say, a permission
		// glitch.
		if slices.ContainsFunc(t.unreadable, func(dir string) bool { return within(p, dir) }) {
			files[p] = st
			continue
		}
		st, at := c.gone(p, st, now, initial)
		if st != nil {
			files[p] = st
		}
		wake = earliest(wake, at)
	}
	c.finish(files, t.problems, wake, initial)
}

// rescanPending looks again at the files with a change not yet taken in
// (see settle.go), and only at them: the settle window's rescan. Every
// other file was looked at by the scan that found the change, and a
// later change to any of them raises an event, which reads it.
func (c *Controller) rescanPending() {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	c.loadPaths(nil, false)
}

// loadPaths reads the files at paths and those with a change pending, and
// no others, and takes in what changed. When there is nothing to read it
// only clears the wake-up, and tells a test's scan hook when events asked
// for the read (named). Must be called with scanMu held.
func (c *Controller) loadPaths(paths []string, named bool) {
	read := slices.Clone(paths)
	for p, st := range c.files {
		if st.pending != nil {
			read = append(read, p)
		}
	}
	if len(read) == 0 {
		c.setWake(time.Time{})
		if named && c.opts.scanned != nil {
			c.opts.scanned()
		}
		return
	}
	slices.Sort(read)
	read = slices.Compact(read)
	now := c.clock.Now()
	c.scanStamp = time.Time{}
	files := maps.Clone(c.files)
	var wake time.Time
	for _, p := range read {
		st, at := c.load(p, now, false)
		if st != nil {
			files[p] = st
		} else {
			delete(files, p)
		}
		wake = earliest(wake, at)
	}
	// What the last walk said about a path read now (a named pipe since
	// replaced, a dangling symlink since removed or mended) is the read's
	// to say, but for a link that still leads nowhere, which a read
	// cannot tell from a file removed.
	walkProblems := slices.DeleteFunc(slices.Clone(c.walkProblems), func(e *config.Error) bool {
		_, ok := slices.BinarySearch(read, e.Source)
		return ok && !dangling(e.Source)
	})
	c.finish(files, walkProblems, wake, false)
}

// finish takes in a scan's file states: when any changed, it recomputes
// the store and queues an event for each object that changed. A scan that
// changed nothing (the common rescan, or one that only found a change not
// yet settled) costs no more than its stats: resolving, indexing and
// diffing every object took most of a rescan's time at 1,000 files. A
// scan that changed a few files resolves, indexes and diffs only the keys
// they define, unless one of them is defined twice (resolveChanged).
// Must be called with scanMu held.
func (c *Controller) finish(files map[string]*fileState, walkProblems []*config.Error, wake time.Time, initial bool) {
	if !initial && sameStates(files, c.files) && slices.EqualFunc(walkProblems, c.walkProblems, sameError) {
		c.setWake(wake)
		if c.opts.scanned != nil {
			c.opts.scanned()
		}
		return
	}
	c.walkProblems = walkProblems
	c.stampGatewayAPI(files)
	c.stampFresh(files)
	old := c.files
	c.files = files

	changed := changedPaths(old, files)
	var keys []config.Key
	var now map[config.Key]config.Config
	incremental := false
	if !initial && c.dups != nil {
		keys, now, incremental = resolveChanged(c.dups, c.served, old, files, changed)
	}
	var res resolution
	if incremental {
		c.resolved.changed++
	} else {
		c.resolved.full++
		res = resolve(files)
		c.dups, c.dupProblems = res.dups, res.dupProblems
	}
	gatewayResolved := !incremental || hasGatewayAPI(old, files, changed)
	var gatewayObjects []manifest.GatewayAPIObject
	if gatewayResolved {
		gatewayObjects, c.gatewayProblems = resolveGatewayAPI(files)
	}
	problems := slices.Concat(walkProblems, fileErrors(files), c.dupProblems, c.gatewayProblems)
	sortErrors(problems)

	var changes []change
	gatewayChanged := false
	c.mu.Lock()
	if incremental {
		changes = c.applyChanged(keys, now)
	} else {
		before := map[config.Key]config.Config{}
		for obj := range c.index.All() {
			before[obj.Key()] = obj
		}
		changes = diff(before, res.objects)
		c.index = memory.New(slices.Collect(maps.Values(res.objects)))
	}
	c.errs = problems
	if gatewayResolved {
		gatewayChanged = c.setGatewayAPI(gatewayObjects)
	}
	c.mu.Unlock()

	// Log before queueing, so whoever sees an event of this scan also sees
	// its warnings.
	c.logNewProblems(problems)
	for _, ch := range changes {
		if !ch.silent {
			c.log.Debug("config changed", "event", ch.event.String(), "key", ch.cur.Key().String(), "source", ch.cur.Source)
		}
		c.queue.Push(c.deliver(ch))
	}
	if gatewayChanged {
		c.queue.Push(c.deliverGatewayAPI)
	}
	if len(changes) > 0 || gatewayChanged {
		c.queue.Push(c.batchDone)
	}
	c.setWake(wake)
	if c.opts.scanned != nil {
		c.opts.scanned()
	}
}

// applyChanged puts the objects now in force at keys (absent: deleted)
// into the store view, copying the index only for their kinds, and
// returns the changes. Must be called with scanMu and mu held.
func (c *Controller) applyChanged(keys []config.Key, now map[config.Key]config.Config) []change {
	before := make(map[config.Key]config.Config, len(keys))
	var put []config.Config
	var del []config.Key
	for _, k := range keys {
		if o := c.index.Get(k.Kind, k.Namespace, k.Name); o != nil {
			before[k] = *o
		}
		if n, ok := now[k]; ok {
			put = append(put, n)
		} else {
			del = append(del, k)
		}
	}
	c.index = c.index.With(put, del)
	return diffKeys(before, now, keys)
}

// served reports whether key has an object in force. Must be called with
// scanMu held (scans alone change the index).
func (c *Controller) served(key config.Key) bool {
	return c.index.Get(key.Kind, key.Namespace, key.Name) != nil
}

// load returns the state of file p as of now, or nil if it no longer
// exists and that has settled, with the time it should be looked at again
// (zero if none).
func (c *Controller) load(p string, now time.Time, initial bool) (*fileState, time.Time) {
	prev := c.files[p]
	// Stat before reading: a change after the stat gives the next scan a
	// different stamp, whichever content this read got.
	stamp, statted := stampFile(p)
	if statted && prev != nil && prev.pending == nil && prev.stat.unchanged(stamp) {
		return prev, time.Time{}
	}
	if statted && !stamp.info.Mode().IsRegular() {
		if stamp.info.IsDir() {
			// As the walk sees it: the file went, a folder came.
			return c.gone(p, prev, now, initial)
		}
		// A FIFO would block the read, and with it every scan.
		return c.unreadable(p, prev, notRegular(stamp.info.Mode())), time.Time{}
	}
	data, err := c.readFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return c.gone(p, prev, now, initial)
	}
	if err != nil {
		return c.unreadable(p, prev, "cannot read file: "+errText(err)), time.Time{}
	}
	sum := sha256.Sum256(data)
	if prev != nil && prev.sum == sum {
		if prev.good != nil {
			// Readable again, as it was: what it served, with its
			// problems, stands again.
			prev = prev.good
		}
		prev.pending = nil
		prev.stat = stamp
		return prev, time.Time{}
	}
	if initial {
		st := c.parse(p, data, sum, prev)
		st.stat = stamp
		return st, time.Time{}
	}
	if prev == nil {
		// A new file may be half written too; it serves nothing until it
		// settles.
		prev = &fileState{}
	}
	since, settled := prev.settle(sum, false, now, c.opts.Settle)
	if !settled {
		return prev, since.Add(c.opts.Settle)
	}
	base := prev
	if base.sum == ([sha256.Size]byte{}) && len(base.objects) == 0 {
		base = nil // never parsed: nothing to keep
	}
	st := c.parse(p, data, sum, base)
	if st.empty && (len(prev.objects) > 0 || len(prev.gateway.objects) > 0) {
		if now.Sub(since) < c.opts.EmptyGrace {
			return prev, since.Add(c.opts.EmptyGrace)
		}
		c.log.Warn("config file has stayed empty; removing the objects it defined",
			"file", p, "emptyFor", now.Sub(since).String(), "objects", keyNames(prev.objects))
	}
	st.stat = stamp
	return st, time.Time{}
}

// gone handles file p, which held prev, no longer being there.
func (c *Controller) gone(p string, prev *fileState, now time.Time, initial bool) (*fileState, time.Time) {
	if prev == nil || initial || (len(prev.objects) == 0 && len(prev.gateway.objects) == 0) {
		return nil, time.Time{}
	}
	since, settled := prev.settle([sha256.Size]byte{}, true, now, c.opts.Settle)
	if !settled {
		return prev, since.Add(c.opts.Settle)
	}
	c.log.Warn("config file removed; removing the objects it defined", "file", p, "objects", keyNames(prev.objects))
	return nil, time.Time{}
}

// parse turns the content of p into its state. A file with any document
// that does not parse keeps the objects it had, since a half-saved file
// must not delete config; the first time a file is seen there is nothing
// to keep, so the documents that did parse are used. An object that fails
// validation keeps its last good version from this file, if any.
func (c *Controller) parse(p string, data []byte, sum [sha256.Size]byte, prev *fileState) *fileState {
	parsed, parseErrs := manifest.ParseAll(p, data, c.opts.Parse)
	objs := parsed.Configs
	st := &fileState{sum: sum, errs: parseErrs, fresh: true}
	st.empty = len(objs) == 0 && len(parsed.GatewayAPI) == 0 && len(parseErrs) == 0
	st.gateway = newGatewayFileState(parsed.GatewayAPI, prev, keepGatewayPrev(parseErrs, prev))
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
	if prev != nil {
		for _, obj := range st.objects {
			if ts, ok := prev.seen.get(obj.Key()); ok {
				st.seen.set(obj.Key(), ts)
			}
		}
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

func keyNames(objs []config.Config) []string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.Key().String())
	}
	return out
}

// sameStates reports whether a and b hold the same state (the same
// pointer) for the same paths.
func sameStates(a, b map[string]*fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for p, st := range a {
		if b[p] != st {
			return false
		}
	}
	return true
}

func sameError(a, b *config.Error) bool {
	return a.Source == b.Source && a.Message == b.Message
}
