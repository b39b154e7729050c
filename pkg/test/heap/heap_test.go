package heap

import "testing"

var sink []byte

func TestAfterGCSeesMemoryReturn(t *testing.T) {
	before := AfterGC()
	sink = make([]byte, 64<<20)
	held := AfterGC()
	sink = nil
	after := AfterGC()
	if held < before+60<<20 {
		t.Errorf("heap with 64 MiB held = %d, before %d: the allocation is not seen", held, before)
	}
	if after > held-60<<20 {
		t.Errorf("heap after release = %d, held %d: the release is not seen", after, held)
	}
}
