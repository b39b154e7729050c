// Package serverenv runs pilot-discovery for tests: in process (StartServer)
// on loopback ports, with fast debouncing and its logs in the test log,
// stopped when the test ends; or as the built binary (BuildBinary,
// StartBinary), whose JSON log lines tests wait on. Gateway and
// NeverReadingGateway connect test xDS clients to either. The featuretests,
// the gRPC, end-to-end, soak and Kubernetes tests and the benchmark share it.
package serverenv

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// WaitTimeout bounds waits on the server; tests normally finish in
// milliseconds.
const WaitTimeout = 20 * time.Second

// readyTimeout bounds startup: in Kubernetes mode the first push waits for
// every informer to sync against an API server on a shared machine.
const readyTimeout = 60 * time.Second

// StartServer runs a server with opts, filling in loopback addresses, fast
// debouncing, a short shutdown grace and a logger writing to the test log
// (unless opts sets them), and returns once it is ready. The server stops
// when the test ends; an error it stops with fails the test.
func StartServer(t testing.TB, opts bootstrap.Options) *bootstrap.Server {
	t.Helper()
	if opts.GRPCAddr == "" {
		opts.GRPCAddr = "127.0.0.1:0"
	}
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = "127.0.0.1:0"
	}
	if opts.Debounce.QuietPeriod == 0 && opts.Debounce.MaxDelay == 0 {
		opts.Debounce = debounce.Options{QuietPeriod: 5 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = 2 * time.Second
	}
	if opts.RescanInterval == 0 {
		opts.RescanInterval = time.Hour // file-system events drive tests
	}
	if opts.Logger == nil {
		opts.Logger = Logger(t, slog.LevelDebug)
	}
	s, err := bootstrap.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("server exited before ready: %v", err)
	case <-time.After(readyTimeout):
		t.Fatal("server not ready")
	}
	return s
}

// Logger returns a logger writing to the test log, shown on failure.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// WriteFile replaces path atomically, as editors and config tools do (the
// temporary name ends in "~", which the file source ignores).
func WriteFile(t testing.TB, path, data string) {
	t.Helper()
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Clean(path)); err != nil {
		t.Fatal(err)
	}
}
