package meshwatch

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
)

// Tracker passes updates to a Holder and remembers how the last one went:
// the Holder keeps the config in force, the Tracker the refusal that did
// not replace it, which a user must be able to see (the log line scrolls
// away; /debug/configz and a metric do not).
type Tracker struct {
	holder *mesh.Holder
	log    *slog.Logger
	now    func() time.Time

	rejected atomic.Uint64

	mu      sync.Mutex
	lastErr *LoadError
}

// LoadError is a refused update: the source, why, and when.
type LoadError struct {
	Source mesh.Source
	Err    error
	At     time.Time
}

// NewTracker wraps h. log (nil: slog.Default()) receives what the Holder
// does not log itself, a source that cannot be read; now stamps refusals
// (nil: time.Now).
func NewTracker(h *mesh.Holder, log *slog.Logger, now func() time.Time) *Tracker {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Tracker{holder: h, log: log, now: now}
}

// Holder is the Holder updates go to.
func (t *Tracker) Holder() *mesh.Holder { return t.holder }

// Current is the mesh config in force.
func (t *Tracker) Current() *mesh.Config { return t.holder.Current() }

// Update hands data from src to the Holder. An accepted update clears the
// last error; a refused one is recorded and counted, and the config in
// force stays.
func (t *Tracker) Update(src mesh.Source, data []byte) error {
	err := t.holder.Update(src, data)
	t.record(src, err)
	return err
}

// fail records an update that could not even be read (an unreadable
// file): the Holder never saw it, the config in force stays.
func (t *Tracker) fail(src mesh.Source, err error) {
	t.log.Warn("mesh config unreadable; keeping the one in force",
		"source", src.String(), "error", err.Error(), "inForce", t.holder.Current().Source.String())
	t.record(src, err)
}

func (t *Tracker) record(src mesh.Source, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		t.lastErr = nil
		return
	}
	t.rejected.Add(1)
	t.lastErr = &LoadError{Source: src, Err: err, At: t.now()}
}

// restore makes le the last error again without counting it: the source
// is back to content already loaded (or refused) before.
func (t *Tracker) restore(le *LoadError) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = le
}

// LastError is the refusal since the last accepted update, nil when the
// last update was accepted.
func (t *Tracker) LastError() *LoadError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastErr
}

// Rejected counts the refused and unreadable updates since start.
func (t *Tracker) Rejected() uint64 { return t.rejected.Load() }
