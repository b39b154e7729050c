package soak

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// figures are the server process's resource counts at one moment.
type figures struct {
	Goroutines int
	FDs        int   // entries of /proc/PID/fd
	RSS        int64 // VmRSS of /proc/PID/status, bytes
	HeapInuse  int64 // go_memstats_heap_inuse_bytes right after a forced GC
	HeapLive   int64 // go_memstats_heap_alloc_bytes then: live objects, without free space in spans
}

func (f figures) String() string {
	return fmt.Sprintf("goroutines=%d fds=%d rss=%.1fMiB heap_inuse_after_gc=%.1fMiB heap_live=%.1fMiB",
		f.Goroutines, f.FDs, float64(f.RSS)/(1<<20), float64(f.HeapInuse)/(1<<20), float64(f.HeapLive)/(1<<20))
}

// bounds are how far the end figures may be above the warm-up's: a fixed
// slack for what a few in-flight requests and the GC's pacing allocate,
// plus a fraction for memory. Anything that grows per change, per
// reconnect or per round exceeds them over hundreds of rounds.
type bounds struct {
	Goroutines int
	FDs        int
	HeapSlack  int64
	HeapFrac   float64
	RSSSlack   int64
	RSSFrac    float64
}

var defaultBounds = bounds{Goroutines: 10, FDs: 5, HeapSlack: 4 << 20, HeapFrac: 0.25, RSSSlack: 24 << 20, RSSFrac: 0.5}

// exceeded lists which of end's figures are beyond base plus b.
func (b bounds) exceeded(base, end figures) []string {
	var out []string
	if end.Goroutines > base.Goroutines+b.Goroutines {
		out = append(out, fmt.Sprintf("goroutines %d -> %d (bound +%d)", base.Goroutines, end.Goroutines, b.Goroutines))
	}
	if end.FDs > base.FDs+b.FDs {
		out = append(out, fmt.Sprintf("open fds %d -> %d (bound +%d)", base.FDs, end.FDs, b.FDs))
	}
	if lim := base.HeapInuse + b.HeapSlack + int64(float64(base.HeapInuse)*b.HeapFrac); end.HeapInuse > lim {
		out = append(out, fmt.Sprintf("heap in use after GC %d -> %d bytes (bound %d)", base.HeapInuse, end.HeapInuse, lim))
	}
	if lim := base.RSS + b.RSSSlack + int64(float64(base.RSS)*b.RSSFrac); end.RSS > lim {
		out = append(out, fmt.Sprintf("RSS %d -> %d bytes (bound %d)", base.RSS, end.RSS, lim))
	}
	return out
}

// process reads the figures of the pilot-discovery at pid whose HTTP port
// is httpAddr; adminToken reads /debug/pprof.
type process struct {
	pid        int
	httpAddr   string
	adminToken string
}

// sample forces a GC in the server (a heap profile with gc=1), then reads
// its goroutines and heap from /metrics and its fds and RSS from /proc.
func (p process) sample() (figures, error) {
	var f figures
	if err := p.get("/debug/pprof/heap?gc=1", nil); err != nil {
		return f, err
	}
	metrics, err := p.metrics("go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes")
	if err != nil {
		return f, err
	}
	if len(metrics) != 3 {
		return f, fmt.Errorf("/metrics lacks go_goroutines or go_memstats_heap_{inuse,alloc}_bytes: %v", metrics)
	}
	f.Goroutines, f.HeapInuse = int(metrics["go_goroutines"]), int64(metrics["go_memstats_heap_inuse_bytes"])
	f.HeapLive = int64(metrics["go_memstats_heap_alloc_bytes"])
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
	if err != nil {
		return f, err
	}
	f.FDs = len(fds)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return f, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return f, fmt.Errorf("VmRSS %q: %v", rest, err)
			}
			f.RSS = kb << 10
		}
	}
	if f.RSS == 0 {
		return f, fmt.Errorf("no VmRSS in /proc/%d/status", p.pid)
	}
	return f, nil
}

// noKeepAlive closes each connection after its request, so the samples do
// not count a connection of ours that happens to be idle.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// metrics reads the named metrics from /metrics, each the sum of its
// samples (over every label set); absent ones are left out.
func (p process) metrics(names ...string) (map[string]float64, error) {
	out := map[string]float64{}
	err := p.get("/metrics", func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			sample, val, ok := strings.Cut(sc.Text(), " ")
			name, _, _ := strings.Cut(sample, "{")
			if !ok || !slices.Contains(names, name) {
				continue
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("metric %s: %v", sample, err)
			}
			out[name] += v
		}
		return sc.Err()
	})
	return out, err
}

// saveProfiles writes the server's heap profile (after a GC) and its
// goroutine dump into dir as heap-NAME.pb.gz and goroutines-NAME.txt, to
// compare the baseline with the end (go tool pprof -diff_base).
func (p process) saveProfiles(dir, name string) error {
	for path, file := range map[string]string{
		"/debug/pprof/heap?gc=1":         "heap-" + name + ".pb.gz",
		"/debug/pprof/goroutine?debug=2": "goroutines-" + name + ".txt",
	} {
		if err := p.get(path, func(r io.Reader) error {
			f, err := os.Create(filepath.Join(dir, file))
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, r); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}); err != nil {
			return err
		}
	}
	return nil
}

func (p process) get(path string, read func(io.Reader) error) error {
	req, err := http.NewRequest(http.MethodGet, "http://"+p.httpAddr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.adminToken)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if read != nil {
		return read(resp.Body)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
