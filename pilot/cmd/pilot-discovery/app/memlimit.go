package app

import (
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// defaultMemoryLimitRatio leaves a tenth of the container's memory for
// what the Go runtime does not count: the binary's mapped pages, thread
// stacks outside Go, the kernel's socket buffers charged to the pod.
const defaultMemoryLimitRatio = 0.9

// applyMemoryLimit sets the Go runtime's soft memory limit to ratio of
// the limit provider reports (the container's cgroup memory limit), so
// that near the limit the collector works harder instead of the pod
// being OOM-killed: a burst of reconnecting gateways, a large config
// push. Without a container limit there is no soft limit. GOMEMLIMIT,
// when set, wins; ratio 0 turns this off. It returns the limit in force.
func applyMemoryLimit(ratio float64, provider memlimit.Provider, logger *slog.Logger) (int64, error) {
	if math.IsNaN(ratio) || ratio < 0 || ratio > 1 {
		return 0, fmt.Errorf("--memory-limit-ratio %v: must be between 0 (off) and 1", ratio)
	}
	if ratio == 0 {
		return debug.SetMemoryLimit(-1), nil
	}
	limit, err := memlimit.Set(memlimit.WithRatio(ratio), memlimit.WithProvider(provider),
		memlimit.WithLogger(logger.With("component", "memlimit")))
	if err != nil {
		// Not fatal: the process runs as it would without the flag.
		logger.Warn("cannot set the soft memory limit from the container's; running without one", "error", err)
		return debug.SetMemoryLimit(-1), nil
	}
	return limit, nil
}
