package snapshot

import (
	"maps"
	"slices"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/types/known/anypb"
)

// SameNameList reports whether a and b are the same list (not equal
// lists): the codec hands every request whose names are byte-for-byte
// those of an earlier one the same never-modified slice, so an ACK, or
// each gateway of a group, carries the list already seen. Without it the
// "same names as answered" check walked every name of a request's own
// name map (5,000 per EDS ACK at 5,000 services).
// A list decoded for its request alone never matches: the names are then
// compared one by one, as before.
func SameNameList(a, b []string) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// namedAnysMemo keeps the last named cut of a TypeSet: the gateways of a
// group subscribe with the same shared list, so one cut serves them all
// (and their responses then share one body, see SotwBody).
type namedAnysMemo struct {
	mu   sync.Mutex
	list []string
	anys []*anypb.Any
}

// NamedAnysFor is NamedAnys(cur, names), where names was built from list,
// computed once per distinct shared list. The result is read-only, like
// cur.anys.
func (cur *TypeSet) NamedAnysFor(list []string, names map[string]struct{}) []*anypb.Any {
	m := &cur.named
	m.mu.Lock()
	defer m.mu.Unlock()
	if SameNameList(list, m.list) {
		return m.anys
	}
	anys := NamedAnys(cur, names)
	m.list, m.anys = list, anys
	return anys
}

// NamedAnys returns the Anys of the named resources of cur that exist, by
// name: walking the sorted set when the names cover much of it, else
// sorting the names.
func NamedAnys(cur *TypeSet, names map[string]struct{}) []*anypb.Any {
	var out []*anypb.Any
	if len(cur.Items) <= 4*len(names) {
		for _, r := range cur.Items {
			if _, ok := names[r.Name]; ok {
				out = append(out, r.Any)
			}
		}
		return out
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if r := cur.ByName[n]; r != nil {
			out = append(out, r.Any)
		}
	}
	return out
}
