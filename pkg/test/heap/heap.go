// Package heap measures the live heap in tests that check memory returns
// when config or clients go away.
package heap

import "runtime"

// AfterGC returns the bytes of live heap after three collections (one may
// only finish sweeping the previous cycle's garbage; finalizers queued by
// the first run before the last).
func AfterGC() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
