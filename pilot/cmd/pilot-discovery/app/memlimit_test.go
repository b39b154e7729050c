package app

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
)

// memoryLimitEnv runs a test with no GOMEMLIMIT or AUTOMEMLIMIT in the
// environment and puts the runtime's soft memory limit back afterwards.
func memoryLimitEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(k, "") // restores the old value at the end
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

func TestMemoryLimitIsAShareOfTheContainers(t *testing.T) {
	memoryLimitEnv(t)
	var container uint64 = 1 << 30
	var logs bytes.Buffer
	got, err := applyMemoryLimit(0.9, memlimit.Limit(container), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(float64(container) * 0.9)
	if got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("limit %d, runtime's %d; want %d (90%% of 1 GiB)", got, debug.SetMemoryLimit(-1), want)
	}
	if !strings.Contains(logs.String(), "GOMEMLIMIT") {
		t.Errorf("the limit set is not logged:\n%s", logs.String())
	}
}

func TestMemoryLimitWithoutAContainerLimitIsNone(t *testing.T) {
	memoryLimitEnv(t)
	debug.SetMemoryLimit(1 << 40)
	got, err := applyMemoryLimit(0.9, func() (uint64, error) { return 0, memlimit.ErrNoLimit }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if got != math.MaxInt64 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("limit %d without a container limit, want none (MaxInt64)", got)
	}
}

// GOMEMLIMIT is the operator's own choice: the flag leaves it alone, and
// so does ratio 0.
func TestMemoryLimitLeavesGOMEMLIMITAndZeroAlone(t *testing.T) {
	memoryLimitEnv(t)
	const own = 300 << 20
	debug.SetMemoryLimit(own)
	if got, err := applyMemoryLimit(0, memlimit.Limit(1<<30), slog.New(slog.DiscardHandler)); err != nil || got != own {
		t.Fatalf("ratio 0: limit %d, %v; want %d untouched", got, err, own)
	}
	t.Setenv("GOMEMLIMIT", "300MiB")
	if got, err := applyMemoryLimit(0.9, memlimit.Limit(1<<30), slog.New(slog.DiscardHandler)); err != nil || got != own {
		t.Fatalf("GOMEMLIMIT set: limit %d, %v; want %d untouched", got, err, own)
	}
}

// A provider that fails (an unreadable cgroup file) leaves the process
// running without a limit and says so.
func TestMemoryLimitProviderErrorIsAWarning(t *testing.T) {
	memoryLimitEnv(t)
	var logs bytes.Buffer
	got, err := applyMemoryLimit(0.9, func() (uint64, error) { return 0, errors.New("cgroup unreadable") },
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("a provider error stopped the process: %v", err)
	}
	if got != debug.SetMemoryLimit(-1) || !strings.Contains(logs.String(), "cgroup unreadable") {
		t.Fatalf("limit %d, logs:\n%s", got, logs.String())
	}
}

func TestMemoryLimitRatioFlag(t *testing.T) {
	memoryLimitEnv(t)
	if def := discoveryCommand(&bootstrap.Options{}).Flags().Lookup("memory-limit-ratio").DefValue; def != "0.9" {
		t.Errorf("--memory-limit-ratio default shown as %q, want 0.9", def)
	}
	for _, bad := range []string{"1.5", "-0.1", "NaN"} {
		cmd := discoveryCommand(&bootstrap.Options{})
		cmd.SetArgs([]string{"--config-dir", t.TempDir(), "--memory-limit-ratio", bad})
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "--memory-limit-ratio") {
			t.Errorf("--memory-limit-ratio %s: error %v, want one naming the flag", bad, err)
		}
	}
}
