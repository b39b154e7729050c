package file

import (
	"context"
	"io/fs"
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
// an edit reaches proxies quickly; a file caught half written parses badly
// for a moment (its last good objects stay) and the write that completes
// it triggers another rescan.
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
	refresh := func() {
		// Watch new directories before reading them: a file written after
		// the watch is added raises an event, one written before is read.
		if w != nil {
			c.watchTree(w)
		}
		c.rescan()
	}

	coalesce := debounce.New(debounce.Options{QuietPeriod: coalesceQuiet, MaxDelay: coalesceMax, LeadingDelay: coalesceLeading, Clock: c.clock},
		func(a, _ struct{}) struct{} { return a }, func(struct{}) { refresh() })
	wg.Go(func() { coalesce.Run(ctx) })
	if w != nil {
		wg.Go(func() { c.forwardEvents(ctx, w, coalesce) })
	}

	// The ticker exists before the first refresh, so a test that sees that
	// refresh's events may step the clock to the next tick.
	ticker := c.clock.NewTicker(c.opts.RescanInterval)
	// Catch anything that changed between New and the watches going in.
	refresh()
	wg.Go(func() {
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				refresh()
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
// as renames of hidden entries.
func (c *Controller) forwardEvents(ctx context.Context, w *fsnotify.Watcher, coalesce *debounce.Debouncer[struct{}]) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			c.log.Debug("config file event", "event", ev.String())
			coalesce.Enqueue(struct{}{})
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// Typically an event queue overflow: events were lost, so rescan.
			c.log.Warn("config watcher error; rescanning", "error", err)
			coalesce.Enqueue(struct{}{})
		}
	}
}

// watchTree adds a watch on every directory under Dir not yet watched
// (fsnotify is not recursive, and a removed directory loses its watch).
func (c *Controller) watchTree(w *fsnotify.Watcher) {
	watched := map[string]bool{}
	for _, p := range w.WatchList() {
		watched[p] = true
	}
	root := c.opts.Dir
	walkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != root && ignored(d.Name()) {
			return fs.SkipDir
		}
		if !watched[p] {
			if err := w.Add(p); err != nil {
				c.log.Warn("cannot watch directory; relying on periodic rescans", "path", p, "error", err)
			}
		}
		return nil
	})
}
