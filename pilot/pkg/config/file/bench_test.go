package file

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/tools/workload"
)

// BenchmarkOneFileChange is the file controller's share of a
// one-VirtualService update in the ADS benchmark's workload: the rescan
// that finds the changed file, and the settle window's scan that takes it
// in and queues its event.
func BenchmarkOneFileChange(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
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
			prefixes := []string{workload.UpdatePrefix, workload.BasePrefix}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if err := workload.WriteUpdate(dir, 0, n, prefixes[i%2]); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c.rescan()
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
