// Package bootstrap assembles pilot-discovery: a config source, the
// discovery (ADS) server, and the gRPC and HTTP listeners, and runs them
// until the context ends.
package bootstrap

import (
	"log/slog"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// Options configure a Server. Flags are parsed into this struct by the
// command; nothing below reads the environment.
type Options struct {
	// GRPCAddr is where ADS is served (Istio's :15010).
	GRPCAddr string
	// HTTPAddr serves debug endpoints, readiness and metrics (Istio's :15014).
	HTTPAddr string
	// ConfigDir is the folder of Istio YAML read in file mode.
	ConfigDir string
	// RescanInterval is how often file mode rescans ConfigDir in case a
	// file-system event was missed.
	RescanInterval time.Duration
	// Debounce merges config changes that arrive close together.
	Debounce debounce.Options
	// ShutdownGrace bounds how long shutdown waits for streams to close.
	ShutdownGrace time.Duration
	Logger        *slog.Logger
}

func (o *Options) applyDefaults() {
	if o.GRPCAddr == "" {
		o.GRPCAddr = ":15010"
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = ":15014"
	}
	if o.RescanInterval == 0 {
		o.RescanInterval = 30 * time.Second
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}
