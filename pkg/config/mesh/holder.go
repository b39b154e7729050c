package mesh

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
)

// HolderOptions configure a Holder. Zero values take the defaults.
type HolderOptions struct {
	// Logger receives refused configs, warnings, and each ignored or
	// unknown field once. Defaults to slog.Default().
	Logger *slog.Logger
	// OnChange, if set, is called after an accepted update that changes
	// the merged MeshConfig, with the config it replaced. Calls are made
	// one at a time, in update order, on the goroutine that called Update;
	// OnChange must not call Update.
	OnChange func(prev, next *Config)
}

// Holder keeps the last good mesh config of one source. It starts at
// istiod's defaults; an update that fails to parse or validate is refused
// and the config before it stays in force, as istiod keeps its last
// known state when its one mesh config source turns bad. It watches
// nothing itself: the file or ConfigMap watcher calls Update.
type Holder struct {
	logger   *slog.Logger
	onChange func(prev, next *Config)

	cur atomic.Pointer[Config] // read without the lock by Current

	mu     sync.Mutex // serializes updates, so OnChange sees them in order
	logged map[string]bool
}

// NewHolder returns a Holder at istiod's defaults.
func NewHolder(opts HolderOptions) *Holder {
	h := &Holder{logger: opts.Logger, onChange: opts.OnChange, logged: map[string]bool{}}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	h.cur.Store(Default())
	return h
}

// Current returns the mesh config in force.
func (h *Holder) Current() *Config { return h.cur.Load() }

// Update parses data from src and, if it is good, makes it the config in
// force. Empty data means istiod's defaults (a ConfigMap without the mesh
// key, or no ConfigMap at all, is the same to istiod). On error the
// config in force is kept and the error, which names src and each bad
// field, is returned and logged.
func (h *Holder) Update(src Source, data []byte) error {
	next, err := Parse(src, data)
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.cur.Load()
	if err != nil {
		h.logger.Warn("mesh config refused; keeping the one in force",
			"source", src.String(), "error", err.Error(), "inForce", prev.Source.String())
		return err
	}
	h.logFields(next)
	h.cur.Store(next)
	if proto.Equal(prev.Mesh, next.Mesh) {
		return nil
	}
	for _, w := range next.Warnings {
		h.logger.Warn("mesh config warning", "source", src.String(), "field", w.Field, "problem", w.Message)
	}
	h.logger.Info("mesh config updated", "source", src.String())
	if h.onChange != nil {
		h.onChange(prev, next)
	}
	return nil
}

// logFields logs each ignored and each unknown field the first time a
// source sets it, so a config re-read on every change does not repeat
// them.
func (h *Holder) logFields(c *Config) {
	for _, f := range c.Ignored() {
		if !h.logged["ignored "+f] {
			h.logged["ignored "+f] = true
			h.logger.Info("mesh config field not read by Wayfinder", "source", c.Source.String(), "field", f)
		}
	}
	for _, f := range c.Unknown {
		if !h.logged["unknown "+f] {
			h.logged["unknown "+f] = true
			h.logger.Warn("mesh config field unknown to MeshConfig; dropped, as istiod does", "source", c.Source.String(), "field", f)
		}
	}
}
