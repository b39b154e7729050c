package xds

import (
	"sync"
	"unsafe"

	"google.golang.org/protobuf/types/known/anypb"
)

// sameNameList reports whether a and b are the same list (not equal
// lists): the codec hands every request whose names are byte-for-byte
// those of an earlier one the same never-modified slice, so an ACK, or
// each gateway of a group, carries the list already seen. Without it the
// "same names as answered" check walked every name of a request's own
// name map (5,000 per EDS ACK at 5,000 services).
// A list decoded for its request alone never matches: the names are then
// compared one by one, as before.
func sameNameList(a, b []string) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// namedAnysMemo keeps the last named cut of a typeSet: the gateways of a
// group subscribe with the same shared list, so one cut serves them all
// (and their responses then share one body, see sotwBody).
type namedAnysMemo struct {
	mu   sync.Mutex
	list []string
	anys []*anypb.Any
}

// namedAnysFor is namedAnys(cur, names), where names was built from list,
// computed once per distinct shared list. The result is read-only, like
// cur.anys.
func (cur *typeSet) namedAnysFor(list []string, names map[string]struct{}) []*anypb.Any {
	m := &cur.named
	m.mu.Lock()
	defer m.mu.Unlock()
	if sameNameList(list, m.list) {
		return m.anys
	}
	anys := namedAnys(cur, names)
	m.list, m.anys = list, anys
	return anys
}
