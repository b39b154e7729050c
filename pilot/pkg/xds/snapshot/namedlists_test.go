package snapshot

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/anypb"
)

// TestNamedAnysFor checks that a named cut is shared only between
// requests carrying the very same name list, and is NamedAnys otherwise.
func TestNamedAnysFor(t *testing.T) {
	var items []*Resource
	for _, n := range []string{"a", "b", "c", "d"} {
		items = append(items, &Resource{Name: n, Hash: n, Any: &anypb.Any{TypeUrl: n}})
	}
	set := NewTypeSet(items)
	toMap := func(list []string) map[string]struct{} {
		m := map[string]struct{}{}
		for _, n := range list {
			m[n] = struct{}{}
		}
		return m
	}
	shared := []string{"c", "a", "x"}
	first := set.NamedAnysFor(shared, toMap(shared))
	if want := NamedAnys(set, toMap(shared)); !slices.Equal(first, want) || len(first) != 2 {
		t.Fatalf("cut = %v, want %v (a and c)", first, want)
	}
	again := set.NamedAnysFor(shared, toMap(shared))
	if len(again) == 0 || &again[0] != &first[0] {
		t.Fatal("the same list did not reuse the cut")
	}
	// Equal names in another slice: computed afresh, same content.
	copied := slices.Clone(shared)
	if got := set.NamedAnysFor(copied, toMap(copied)); &got[0] == &first[0] || !slices.Equal(got, first) {
		t.Fatal("an equal list in another slice must be cut afresh, with the same content")
	}
	other := []string{"d"}
	if got := set.NamedAnysFor(other, toMap(other)); len(got) != 1 || got[0] != items[3].Any {
		t.Fatalf("cut for [d] = %v", got)
	}
	if SameNameList(nil, nil) || SameNameList(shared, copied) || !SameNameList(shared, shared) {
		t.Fatal("SameNameList must hold for the very same non-empty slice only")
	}
}
