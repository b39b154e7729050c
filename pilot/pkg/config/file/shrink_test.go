package file

import (
	"fmt"
	"testing"
)

// After most objects are removed, the delivered view is copied into a map
// of its size: a Go map never gives back the buckets of its largest size.
func TestDeliveredViewShrinks(t *testing.T) {
	var many []string
	for i := range 2000 {
		many = append(many, serviceEntry("bulk", fmt.Sprintf("se-%d", i), fmt.Sprintf("se-%d.example.com", i)))
	}
	e, rec, clk := unreadableEnv(t, map[string]string{"bulk.yaml": docs(many...)})
	for range many {
		rec.next()
	}
	peak := func() (n, size int) {
		done := make(chan struct{})
		e.c.queue.Push(func() error { n, size = e.c.deliveredPeak, len(e.c.delivered); close(done); return nil })
		<-done
		return n, size
	}
	if n, _ := peak(); n != 2000 {
		t.Fatalf("peak %d, want 2000", n)
	}
	e.writeInPlace("bulk.yaml", many[0])
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	for range 1999 {
		rec.next()
	}
	if n, size := peak(); n != 1 || size != 1 {
		t.Fatalf("after removing 1,999 of 2,000: peak %d, size %d; want the map rebuilt at 1", n, size)
	}
}
