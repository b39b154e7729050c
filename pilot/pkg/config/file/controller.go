// Package file is the file-mode config source: it reads Istio networking
// config from a directory of YAML/JSON manifests, keeps it in memory, and
// tells registered handlers about every object added, updated or deleted.
// Kubernetes Gateway API objects of the same folder are kept alongside
// (gatewayapi.go) for the Gateway API source to convert.
//
// A broken edit must never take config away from running proxies, so a
// file that fails to parse keeps the objects it last contributed, an object
// that fails validation keeps its last valid version, and every problem is
// reported through ConfigErrors instead of aborting the load. Nor must the
// way a file is written: a change is taken in only once it has settled, an
// emptied file keeps its objects for a grace period, and a name defined
// twice stays with the definition seen first.
package file

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
)

// Options configure a Controller.
type Options struct {
	// Dir is the directory read recursively for *.yaml, *.yml and *.json.
	Dir string
	// RescanInterval is how often the whole directory is re-read, as a
	// backstop for changes the file watcher missed. Defaults to 30s.
	RescanInterval time.Duration
	// Clock drives the rescan ticker and change coalescing; defaults to the
	// real clock.
	Clock clock.WithTicker
	// Logger receives config problems and watcher trouble; defaults to
	// slog.Default().
	Logger *slog.Logger
	// Parse tunes manifest parsing (the default namespace).
	Parse manifest.Options
	// Settle is how long a changed or removed file must stay as it is
	// before it is taken in; until then it keeps serving what it served.
	// Defaults to 100ms.
	Settle time.Duration
	// EmptyGrace is how long a file that had objects must stay empty
	// before they are removed; at least Settle. Defaults to 1s.
	EmptyGrace time.Duration
	// Queue carries events to handlers. If nil the controller creates one
	// and Run runs it; a queue passed in must be run by its owner.
	Queue *queue.Queue

	// validate replaces validation.Validate in tests.
	validate func(config.Config) error
	// readFile replaces os.ReadFile in tests (root reads a file of mode
	// 000, so a test running as root fails reads this way instead).
	readFile func(string) ([]byte, error)
	// disableWatch turns off fsnotify in tests of the rescan backstop.
	disableWatch bool
	// scanned, if set, is called after every scan (tests wait on it).
	scanned func()
	// walked, if set, is called with the directories watchTree found,
	// before it adds their watches (tests make one in between).
	walked func(dirs []string)
}

const defaultRescanInterval = 30 * time.Second

// Controller is the file-mode model.ConfigStoreController.
type Controller struct {
	opts     Options
	log      *slog.Logger
	clock    clock.WithTicker
	queue    *queue.Queue
	ownQueue bool
	validate func(config.Config) error
	readFile func(string) ([]byte, error)

	// scanMu serialises scans, so the events of one scan are all queued
	// before those of the next.
	scanMu sync.Mutex
	// files is the state of every config file, by path. Guarded by scanMu.
	files map[string]*fileState
	// walkProblems are the last directory walk's problems. Guarded by
	// scanMu.
	walkProblems []*config.Error
	// walkLinks is whether the last walk met a symlink (tree.links).
	// Guarded by scanMu.
	walkLinks bool
	// dups are the keys defined more than once and dupProblems the
	// problems that reports; gatewayProblems are the Gateway API objects'
	// (see resolution). Guarded by scanMu; dups is nil until the first
	// scan resolved everything.
	dups                         map[config.Key]bool
	dupProblems, gatewayProblems []*config.Error
	// resolved counts the scans that resolved everything and those that
	// resolved only the changed files' keys. Guarded by scanMu.
	resolved struct{ full, changed int }
	// scans counts the scans that walked the tree and those that read
	// only the files a batch of events named (named.go). Guarded by
	// scanMu.
	scans struct{ walked, named int }
	// reported holds the problems already logged. Guarded by scanMu.
	reported map[string]bool
	// lastStamp is the latest first-seen stamp given, scanStamp the one
	// of the scan running (zero until needed). Guarded by scanMu.
	lastStamp, scanStamp time.Time

	// wakeAt is when a pending file change is due for another scan; wake
	// tells runSettle it moved.
	wakeMu sync.Mutex
	wakeAt time.Time
	wake   chan struct{}

	// watched is each watched directory as it was when its watch was
	// added. Guarded by watchMu.
	watchMu sync.Mutex
	watched map[string]os.FileInfo

	// mu guards the store view read by Get, List and ConfigErrors. It runs
	// ahead of what handlers have been told.
	mu sync.RWMutex
	// index holds the objects in force and serves Get and List; a scan
	// that changed a few files copies only their kinds' lists (With).
	index *memory.Store
	errs  []*config.Error
	// gatewayAPI are the Gateway API objects in force (gatewayapi.go).
	gatewayAPI []manifest.GatewayAPIObject

	// handlers and delivered are touched only by queue tasks, which run one
	// at a time and in order: delivered is exactly what handlers have been
	// told, so a late handler is replayed precisely that, no more, no less.
	handlers  map[schema.Kind][]model.EventHandler
	delivered map[config.Key]config.Config
	// deliveredPeak is the most delivered held since it was last
	// rebuilt (shrinkDelivered).
	deliveredPeak int
	// gatewayHandlers run after a scan that changed gatewayAPI;
	// batchHandlers after every scan that changed anything (OnBatch).
	gatewayHandlers []func()
	batchHandlers   []func()

	syncMu      sync.Mutex
	loaded      bool // the initial load's events have run
	pendingRegs int  // handlers registered before sync, not yet replayed
	synced      atomic.Bool
}

var (
	_ model.ConfigStoreController = (*Controller)(nil)
	_ model.ConfigErrorReporter   = (*Controller)(nil)
)

// New reads Dir and queues an add for every object found. It starts no
// goroutines; Run watches for changes.
func New(opts Options) (*Controller, error) {
	if opts.Dir == "" {
		return nil, errors.New("config directory is not set")
	}
	opts.Dir = filepath.Clean(opts.Dir)
	st, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("config directory %q: %w", opts.Dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("config directory %q is not a directory", opts.Dir)
	}
	if opts.RescanInterval <= 0 {
		opts.RescanInterval = defaultRescanInterval
	}
	if opts.Settle <= 0 {
		opts.Settle = defaultSettle
	}
	if opts.EmptyGrace <= 0 {
		opts.EmptyGrace = defaultEmptyGrace
	}
	opts.EmptyGrace = max(opts.EmptyGrace, opts.Settle)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.validate == nil {
		opts.validate = validation.Validate
	}
	if opts.readFile == nil {
		opts.readFile = os.ReadFile
	}
	c := &Controller{
		opts:      opts,
		log:       opts.Logger.With("dir", opts.Dir),
		clock:     opts.Clock,
		queue:     opts.Queue,
		validate:  opts.validate,
		readFile:  opts.readFile,
		files:     map[string]*fileState{},
		reported:  map[string]bool{},
		index:     memory.New(nil),
		handlers:  map[schema.Kind][]model.EventHandler{},
		delivered: map[config.Key]config.Config{},
		wake:      make(chan struct{}, 1),
		watched:   map[string]os.FileInfo{},
	}
	if c.queue == nil {
		c.queue = queue.New(queue.Options{Clock: opts.Clock, Logger: opts.Logger})
		c.ownQueue = true
	}
	c.scan(true)
	c.queue.Push(func() error {
		c.syncMu.Lock()
		defer c.syncMu.Unlock()
		c.loaded = true
		c.updateSynced()
		return nil
	})
	return c, nil
}

// Get returns the object or nil. The result is a copy of the stored
// metadata sharing the stored spec, which must not be mutated.
func (c *Controller) Get(kind schema.Kind, namespace, name string) *config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.index.Get(kind, namespace, name)
}

// List returns the objects of kind in namespace ("" for all), sorted by
// namespace then name.
func (c *Controller) List(kind schema.Kind, namespace string) []config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.index.List(kind, namespace)
}

// ConfigErrors returns the problems standing now, sorted by file, document,
// object and field. They clear when the file is fixed or removed.
func (c *Controller) ConfigErrors() []*config.Error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.errs)
}

// HasSynced reports whether the initial load has been delivered to every
// handler registered before that happened. It never goes back to false.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// RegisterEventHandler adds handler for kind. Registration runs as a task
// on the event queue, so it is ordered with event delivery: the handler is
// first given an add for every object already delivered, then every later
// event, with nothing missed or repeated.
func (c *Controller) RegisterEventHandler(kind schema.Kind, handler model.EventHandler) {
	c.syncMu.Lock()
	counted := !c.synced.Load()
	if counted {
		c.pendingRegs++
	}
	c.syncMu.Unlock()
	c.queue.Push(func() error {
		c.handlers[kind] = append(c.handlers[kind], handler)
		var existing []config.Config
		for k, obj := range c.delivered {
			if k.Kind == kind {
				existing = append(existing, obj)
			}
		}
		slices.SortFunc(existing, compareConfigs)
		for _, obj := range existing {
			handler(config.Config{}, obj, model.EventAdd)
		}
		if counted {
			c.syncMu.Lock()
			c.pendingRegs--
			c.updateSynced()
			c.syncMu.Unlock()
		}
		return nil
	})
}

// updateSynced must be called with syncMu held.
func (c *Controller) updateSynced() {
	if c.loaded && c.pendingRegs == 0 {
		c.synced.Store(true)
	}
}
