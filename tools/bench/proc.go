package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// proc is a server process under measurement.
type proc struct {
	cmd  *exec.Cmd
	done chan error
	log  *os.File
}

// startProc runs bin with args, its output going to logPath and, when
// also is not nil, to also.
func startProc(bin string, args []string, logPath string, also io.Writer) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	var out io.Writer = f
	if also != nil {
		out = io.MultiWriter(f, also)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), log: f}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// waitReady polls url until it answers 200, the process exits or ctx ends.
// The bench is a tool, not a test: polling a readiness endpoint is what a
// deployment would do too.
func (p *proc) waitReady(ctx context.Context, url string) error {
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("server exited before it was ready: %v (see %s)", err, p.log.Name())
		case <-ctx.Done():
			return fmt.Errorf("server not ready: %w (see %s)", ctx.Err(), p.log.Name())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// usage reads the process's peak RSS and CPU seconds so far.
func (p *proc) usage() (usage, error) {
	pid := p.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage{}, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return usage{}, err
	}
	rss, err := parseVmHWM(string(status))
	if err != nil {
		return usage{}, err
	}
	cpu, err := parseCPUSeconds(string(stat))
	if err != nil {
		return usage{}, err
	}
	return usage{PeakRSSBytes: rss, CPUSeconds: cpu}, nil
}

// stop sends SIGTERM and waits, killing after 10s.
func (p *proc) stop() {
	defer p.log.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

type usage struct {
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	CPUSeconds   float64 `json:"cpu_seconds"`
}

// parseVmHWM reads the peak resident set size from /proc/PID/status.
func parseVmHWM(status string) (int64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM: %w", err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmHWM in /proc/PID/status")
}

// parseCPUSeconds reads utime+stime from /proc/PID/stat. The command name
// (field 2) may hold spaces and parentheses, so fields are counted from
// the last ')'.
func parseCPUSeconds(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/PID/stat: %w", err)
	}
	return float64(ut+st) / clockTicks, nil
}

// selfCPUSeconds is this process's CPU time so far.
func selfCPUSeconds() (float64, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	return parseCPUSeconds(string(b))
}

// freePort returns a loopback address nobody listens on right now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
