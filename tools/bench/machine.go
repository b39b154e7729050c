package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where and when the matrix ran.
type machine struct {
	Date     string  `json:"date"`
	CPUs     int     `json:"cpus"`
	MemoryGB float64 `json:"memory_gb"`
	CPUModel string  `json:"cpu_model,omitempty"`
	Go       string  `json:"go"`
	Commit   string  `json:"commit,omitempty"`
	// Load is the 1, 5 and 15 minute load averages when the bench started:
	// whether something else was using the machine.
	Load string `json:"load,omitempty"`
	Note string `json:"note,omitempty"`
}

// loadAverage is /proc/loadavg's three load averages, "" where there is
// none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// sourceCommit is the checkout's commit, marked when the tree has
// uncommitted changes; empty outside a git checkout. The bench reads it
// as it starts, when it builds the servers, so a commit made during a
// long run is not credited with the run's figures.
func sourceCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

func machineInfo(note, commit, load string, started time.Time) machine {
	m := machine{Date: started.Format("2006-01-02 15:04 MST"), CPUs: runtime.NumCPU(), Go: runtime.Version(), Note: note, Commit: commit, Load: load}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryGB = memTotalGB(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// memTotalGB reads MemTotal from /proc/meminfo.
func memTotalGB(meminfo string) float64 {
	for line := range strings.Lines(meminfo) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return float64(int(kb/(1<<20)*10+0.5)) / 10
			}
		}
	}
	return 0
}

func postUpdate(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}
