package meshwatch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// DefaultFileDebounce is how long the file's directory must be quiet
// before the file is read again: istiod waits 100ms too (its file
// watcher's debounce), long enough for an editor's write-and-rename or a
// kubelet's symlink swap to finish.
const DefaultFileDebounce = 100 * time.Millisecond

// FileOptions configure a FileWatcher.
type FileOptions struct {
	// Path is the mesh config file. Required.
	Path string
	// Tracker receives each new content. Required.
	Tracker *Tracker
	// Debounce is the quiet period after a change in the file's directory
	// before the file is read (default DefaultFileDebounce).
	Debounce time.Duration
	// Clock drives the debounce (default the real clock).
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// FileWatcher reads a mesh config file at start and again whenever its
// content changes, as istiod watches its --meshConfig file. It watches the
// file's directory, not the file: a ConfigMap volume replaces the file by
// swapping a symlink (..data) in that directory, and an editor by renaming
// a new file over it; a watch on the file itself would see neither.
type FileWatcher struct {
	opts FileOptions
	src  mesh.Source

	mu   sync.Mutex
	last []byte // the content last handed to the Tracker
	// unreadable is set while the file cannot be read; lastErr is what
	// the Tracker recorded for last (nil: accepted), which stands again
	// when the same content becomes readable.
	unreadable bool
	lastErr    *LoadError
}

// NewFile reads the file once, so the server starts with it: a file that
// cannot be read or is refused fails the start (after that, a bad content
// keeps the last good one). istiod starts with its defaults instead; a
// file named on the command line that is wrong should stop a rollout, not
// serve gateways without the access logs and tracing it configures.
func NewFile(opts FileOptions) (*FileWatcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultFileDebounce
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := &FileWatcher{opts: opts, src: mesh.FileSource(opts.Path)}
	data, err := os.ReadFile(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("--mesh-config: %w", err)
	}
	if err := opts.Tracker.Update(w.src, data); err != nil {
		return nil, fmt.Errorf("--mesh-config: %w", err)
	}
	w.last = data
	return w, nil
}

// Run watches the file until ctx ends. Without a working watch (no
// inotify instance left, say) the file read at start stays in force; the
// error is logged.
func (w *FileWatcher) Run(ctx context.Context) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		w.opts.Logger.Error("cannot watch the mesh config file; changes to it are not seen until restart", "file", w.opts.Path, "error", err)
		return
	}
	defer fw.Close()
	dir := filepath.Dir(w.opts.Path)
	if err := fw.Add(dir); err != nil {
		w.opts.Logger.Error("cannot watch the mesh config file's directory; changes to it are not seen until restart", "dir", dir, "error", err)
		return
	}
	d := debounce.New(debounce.Options{QuietPeriod: w.opts.Debounce, MaxDelay: 10 * w.opts.Debounce, Clock: w.opts.Clock},
		func(a, b struct{}) struct{} { return a }, func(struct{}) { w.Reload() })
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	// Whatever changed between NewFile and the watch going in.
	w.Reload()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case ev, ok := <-fw.Events:
			if !ok {
				wg.Wait()
				return
			}
			// Any name in the directory counts: a symlink swap renames
			// ..data, not the file. Reload reads only when the content
			// changed, so the neighbours' events cost a read.
			w.opts.Logger.Debug("mesh config directory event", "event", ev.String())
			d.Enqueue(struct{}{})
		case err, ok := <-fw.Errors:
			if !ok {
				wg.Wait()
				return
			}
			w.opts.Logger.Warn("mesh config watcher error; reading the file again", "file", w.opts.Path, "error", err)
			d.Enqueue(struct{}{})
		}
	}
}

// Reload reads the file and hands it to the Tracker when its content
// differs from the last read. An unreadable file (removed, half swapped,
// no permission) keeps the config in force, as istiod keeps its last
// content; the error is recorded.
func (w *FileWatcher) Reload() {
	data, err := os.ReadFile(w.opts.Path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.unreadable = true
		w.opts.Tracker.fail(w.src, err)
		return
	}
	if bytes.Equal(data, w.last) {
		if w.unreadable {
			w.unreadable = false
			w.opts.Tracker.restore(w.lastErr)
		}
		return
	}
	w.unreadable = false
	w.last = data
	_ = w.opts.Tracker.Update(w.src, data) // logged and recorded by the Tracker
	w.lastErr = w.opts.Tracker.LastError()
}
