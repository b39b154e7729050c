package xds

import (
	"math/bits"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

// Every served type has its own bit in a typeMask, below allTypes' bits
// for types not served.
func TestTypeMaskHoldsEveryServedType(t *testing.T) {
	if n := len(snapshot.Types); n >= bits.OnesCount32(uint32(allTypes)) {
		t.Fatalf("%d served types do not fit a typeMask", n)
	}
}
