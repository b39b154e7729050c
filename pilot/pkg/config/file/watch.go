package file

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// Editors save in bursts (write a temp file, rename it over the original,
// or truncate then write); rescanning once the burst has been quiet for a
// moment avoids reading a half-written file.
//
// A lone change after a quiet spell is read after coalesceLeading only, so
// an edit reaches proxies quickly; a file caught half written is not taken
// in until it has settled (settle.go), and the write that completes it
// triggers another rescan.
const (
	coalesceLeading = 10 * time.Millisecond
	coalesceQuiet   = 100 * time.Millisecond
	coalesceMax     = time.Second
)

// Run watches Dir until ctx is cancelled, rescanning on file changes and
// every RescanInterval. It runs the event queue too, unless the queue was
// passed in Options. Run must be called once; it returns after closing the
// watcher and stopping every goroutine it started.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if c.ownQueue {
		wg.Go(func() { c.queue.Run(ctx) })
	}

	var w *fsnotify.Watcher
	if !c.opts.disableWatch {
		var err error
		if w, err = fsnotify.NewWatcher(); err != nil {
			c.log.Error("cannot watch config directory; relying on periodic rescans",
				"error", err, "rescanInterval", c.opts.RescanInterval)
			w = nil
		}
	}
	// A batch that names config files alone reads those (named.go);
	// anything else walks the tree. Watch new directories before reading
	// them: a file written after the watch is added raises an event, one
	// written before is read.
	refresh := func(ev events) {
		if w == nil {
			c.rescan()
			return
		}
		if !ev.all && c.rescanNamed(ev.paths) {
			return
		}
		c.watchTree(w)
		c.rescan()
	}

	coalesce := debounce.New(debounce.Options{QuietPeriod: coalesceQuiet, MaxDelay: coalesceMax, LeadingDelay: coalesceLeading, Clock: c.clock},
		mergeEvents, refresh)
	wg.Go(func() { coalesce.Run(ctx) })
	if w != nil {
		wg.Go(func() { c.forwardEvents(ctx, w, coalesce) })
	}

	// The settle window's rescan reads the pending files alone. A
	// directory deleted and made anew since the last refresh raised an
	// event in its parent, which makes the next refresh walk the tree and
	// watch it again.
	settle := c.rescanPending
	wg.Go(func() { c.runSettle(ctx, settle) })

	// The ticker exists before the first refresh, so a test that sees that
	// refresh's events may step the clock to the next tick.
	ticker := c.clock.NewTicker(c.opts.RescanInterval)
	// Catch anything that changed between New and the watches going in.
	refresh(readAll)
	wg.Go(func() {
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				refresh(readAll)
			}
		}
	})

	<-ctx.Done()
	wg.Wait()
	if w != nil {
		if err := w.Close(); err != nil {
			c.log.Warn("closing config watcher", "error", err)
		}
	}
}

// forwardEvents turns watcher events into coalesced rescans. Any event
// counts, even on ignored names: a ConfigMap volume update shows up only
// as renames of hidden entries (which make the rescan walk the tree). A
// change of mode or owner counts too: it can make a file unreadable, which
// must be reported now, not at the next periodic rescan (touching a file
// costs a read and a hash; its stat stamp changed).
func (c *Controller) forwardEvents(ctx context.Context, w *fsnotify.Watcher, coalesce *debounce.Debouncer[events]) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !c.relevant(ev.Name) {
				continue
			}
			c.log.Debug("config file event", "event", ev.String())
			coalesce.Enqueue(eventAt(ev.Name))
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// Typically an event queue overflow: events were lost, so rescan.
			c.log.Warn("config watcher error; rescanning", "error", err)
			coalesce.Enqueue(readAll)
		}
	}
}

// watchTree adds a watch on every directory under Dir not yet watched
// (fsnotify is not recursive) and on Dir's parent, so Dir itself being
// removed, recreated or swapped (a symlink replaced) is seen. A directory
// that was removed and recreated, or whose symlink now leads elsewhere (a
// ConfigMap's ..data swap, a replaced symlinked folder), is a different
// directory under the same path: its watch is dropped and added again, so
// the new directory is watched at once rather than at the next rescan.
//
// A directory made inside a new one after the walk found the new one but
// before its watch went on raised its event before anything watched: the
// tree is walked again after every round that added a watch, until a walk
// finds nothing new. Without that, a file written into it later went
// unseen until the periodic rescan. Files written into a directory before
// its watch went on raised no event: the caller reads everything after.
func (c *Controller) watchTree(w *fsnotify.Watcher) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	// fsnotify drops the watch of a directory that is deleted; a new
	// directory at the same path may reuse the inode number, so both the
	// watch list and the identity are checked.
	live := map[string]bool{}
	for _, p := range w.WatchList() {
		live[p] = true
	}
	for {
		want := c.watchable()
		if c.opts.walked != nil {
			c.opts.walked(want)
		}
		if !c.addWatches(w, want, live) {
			c.dropWatches(w, want)
			return
		}
	}
}

// watchable returns the directories watchTree watches: Dir, every
// directory under it, and Dir's parent.
func (c *Controller) watchable() []string {
	root := c.opts.Dir
	want := walkTree(root).dirs
	if parent := filepath.Dir(root); parent != root {
		want = append(want, parent)
	}
	return want
}

// addWatches adds a watch on each directory of want not watched yet (or
// replaced since), marking it in live, and reports whether it added any.
// Must be called with watchMu held.
func (c *Controller) addWatches(w *fsnotify.Watcher, want []string, live map[string]bool) (added bool) {
	parent := filepath.Dir(c.opts.Dir)
	for _, p := range want {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if old, ok := c.watched[p]; ok {
			if live[p] && os.SameFile(old, st) {
				continue
			}
			_ = w.Remove(p) // may already be gone with its directory
			c.log.Debug("directory replaced; watching it again", "path", p)
		}
		if err := w.Add(p); err != nil {
			level := slog.LevelWarn
			if p == parent {
				// Only Dir itself being replaced goes unseen; not worth a
				// warning on every refresh.
				level = slog.LevelDebug
			}
			c.log.Log(context.Background(), level, "cannot watch directory; relying on periodic rescans", "path", p, "error", err)
			delete(c.watched, p)
			continue
		}
		c.watched[p] = st
		live[p] = true
		added = true
	}
	return added
}

// dropWatches removes the watches of directories no longer in want.
// Must be called with watchMu held.
func (c *Controller) dropWatches(w *fsnotify.Watcher, want []string) {
	wanted := make(map[string]bool, len(want))
	for _, p := range want {
		wanted[p] = true
	}
	for p := range c.watched {
		if !wanted[p] {
			_ = w.Remove(p)
			delete(c.watched, p)
		}
	}
}

// relevant reports whether an event on path p may change the config: it
// is Dir or inside it, not a sibling seen through the watch on Dir's parent.
func (c *Controller) relevant(p string) bool {
	return p == c.opts.Dir || within(p, c.opts.Dir)
}
