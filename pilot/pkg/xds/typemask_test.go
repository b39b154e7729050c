package xds

import (
	"math/bits"
	"testing"
)

// Every served type has its own bit in a typeMask, below allTypes' bits
// for types not served.
func TestTypeMaskHoldsEveryServedType(t *testing.T) {
	if n := len(servedTypes); n >= bits.OnesCount32(uint32(allTypes)) {
		t.Fatalf("%d served types do not fit a typeMask", n)
	}
}
