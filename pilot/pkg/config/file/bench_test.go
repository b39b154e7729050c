package file

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// BenchmarkOneFileChange is the file controller's share of a
// one-VirtualService update in the ADS benchmark's workload: the scan that
// finds the changed file, and the settle window's scan that takes it in
// and queues its event. "walk" finds it by walking the tree (the periodic
// rescan, or events that named a directory), "named" by reading the file
// the watcher's events named (named.go).
func BenchmarkOneFileChange(b *testing.B) {
	for _, tc := range []struct {
		n    int
		mode string
	}{{1000, "walk"}, {1000, "named"}, {5000, "walk"}, {5000, "named"}} {
		n := tc.n
		b.Run(fmt.Sprintf("services=%d/%s", n, tc.mode), func(b *testing.B) {
			dir := b.TempDir()
			if err := workload.Write(dir, workload.Options{Services: n}); err != nil {
				b.Fatal(err)
			}
			heap := func() float64 {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				return float64(m.HeapAlloc) / (1 << 20)
			}
			base := heap()
			c, err := New(Options{Dir: dir, Settle: time.Nanosecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), disableWatch: true})
			if err != nil {
				b.Fatal(err)
			}
			c.scan(true)
			// What the controller holds for the folder: the objects, their
			// index, and each file's state.
			held := heap() - base
			if got := len(c.List(schema.VirtualService, "")); got != n {
				b.Fatalf("%d VirtualServices loaded, want %d", got, n)
			}
			c.watched[dir] = nil // as if Run watched it
			changed := map[string]struct{}{filepath.Join(dir, workload.VirtualServiceFile(0)): {}}
			prefixes := []string{workload.UpdatePrefix, workload.BasePrefix}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if err := workload.WriteUpdate(dir, 0, n, prefixes[i%2]); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if tc.mode == "walk" {
					c.rescan()
				} else if !c.rescanNamed(changed) {
					b.Fatal("the named file was not read by name")
				}
				time.Sleep(time.Microsecond) // past the settle window
				c.rescanPending()
			}
			b.StopTimer()
			vs := c.Get(schema.VirtualService, "default", "app-0")
			if vs == nil {
				b.Fatal("app-0 missing")
			}
			runtime.KeepAlive(c)
			b.ReportMetric(held, "held-MB")
		})
	}
}
