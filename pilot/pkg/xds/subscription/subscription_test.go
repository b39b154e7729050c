package subscription

import (
	"maps"
	"slices"
	"testing"
)

// The xDS rules for what a request subscribes to, in both protocols.
func TestSubscriptionRules(t *testing.T) {
	names := func(s *Subscription) []string { return slices.Sorted(maps.Keys(s.names)) }

	// SotW, legacy allowed (CDS, LDS): empty is wildcard until a name is
	// given; then only "*" makes it wildcard.
	s := NewSotw(nil, true)
	if !s.IsWildcard() {
		t.Error("SotW: an empty first request of a legacy type is not wildcard")
	}
	s.SetSotw(nil)
	if !s.IsWildcard() {
		t.Error("SotW: an empty request ended legacy wildcard")
	}
	s.SetSotw([]string{"a"})
	if s.IsWildcard() || !slices.Equal(names(s), []string{"a"}) {
		t.Errorf("SotW: naming a: wildcard %v names %v", s.IsWildcard(), names(s))
	}
	s.SetSotw(nil)
	if s.IsWildcard() || len(s.names) != 0 {
		t.Error("SotW: after legacy mode ended an empty request subscribes to something")
	}
	s.SetSotw([]string{"*", "b"})
	if !s.IsWildcard() || !slices.Equal(names(s), []string{"b"}) {
		t.Errorf("SotW: naming * and b: wildcard %v names %v", s.IsWildcard(), names(s))
	}
	// Legacy not allowed (EDS, RDS, SDS): empty is nothing.
	if NewSotw(nil, false).IsWildcard() {
		t.Error("SotW: an empty request of a named type is wildcard")
	}

	// Delta, legacy allowed.
	d := NewDelta(nil, nil, nil, true)
	if !d.IsWildcard() {
		t.Error("delta: an empty first request of a legacy type is not wildcard")
	}
	d.UpdateDelta([]string{"a"}, nil)
	if !d.IsWildcard() || !slices.Equal(names(d), []string{"a"}) {
		t.Errorf("delta: subscribing a from legacy wildcard: wildcard %v names %v, want still wildcard", d.IsWildcard(), names(d))
	}
	d.known = map[string]string{"a": "h1", "z": "h2"}
	d.UpdateDelta(nil, []string{"a"})
	if v, ok := d.known["a"]; !ok || v != "" {
		t.Errorf("delta: a name unsubscribed from a wildcard stream is not marked for resending: %q %v", v, ok)
	}
	d.UpdateDelta(nil, []string{"*"})
	if d.IsWildcard() {
		t.Error("delta: unsubscribing * left it wildcard")
	}
	d.UpdateDelta([]string{"b"}, nil)
	d.UpdateDelta(nil, []string{"b"})
	if _, ok := d.known["b"]; ok || len(d.names) != 0 {
		t.Errorf("delta: unsubscribed b kept: known %v names %v", d.known, names(d))
	}
	// Legacy not allowed: explicit names only.
	e := NewDelta([]string{"x", "y"}, []string{"y"}, map[string]string{"x": "1"}, false)
	if e.IsWildcard() || !slices.Equal(names(e), []string{"x"}) || e.known["x"] != "1" {
		t.Errorf("delta: first request x,y minus y: wildcard %v names %v known %v", e.IsWildcard(), names(e), e.known)
	}
}

// A subscription never changes a map it shares with other streams: the
// name set of a shared request list, or a view's version map.
func TestSubscriptionCopiesSharedMapsBeforeChanging(t *testing.T) {
	sharedNames := map[string]struct{}{"a": {}, "b": {}}
	sharedKnown := map[string]string{"a": "1", "b": "2"}
	s := &Subscription{names: sharedNames, namesShared: true}
	s.SetKnown(sharedKnown, true)
	s.UpdateDelta([]string{"c"}, []string{"a"})
	if len(sharedNames) != 2 || len(sharedKnown) != 2 {
		t.Fatalf("shared maps changed: names %v known %v", sharedNames, sharedKnown)
	}
	if _, ok := s.names["c"]; !ok || len(s.names) != 2 {
		t.Errorf("own names %v, want b and c", slices.Sorted(maps.Keys(s.names)))
	}
	if _, ok := s.known["a"]; ok || s.knownShared || s.namesShared {
		t.Errorf("own known %v (shared %v), names shared %v", s.known, s.knownShared, s.namesShared)
	}
}

// A subscription counts the bytes of the names it holds, once each, as
// names come and go.
func TestSubscriptionCountsNameBytes(t *testing.T) {
	w := func(names ...string) int64 {
		var n int64
		for _, s := range names {
			n += nameBytes(s)
		}
		return n
	}
	d := NewDelta([]string{"a", "bb", "bb"}, []string{"a"}, nil, false)
	if d.nameBytes != w("bb") {
		t.Fatalf("after subscribe a, bb, bb and unsubscribe a: %d bytes, want %d", d.nameBytes, w("bb"))
	}
	d.UpdateDelta([]string{"bb", "ccc", "*"}, []string{"zz"})
	if d.nameBytes != w("bb", "ccc") {
		t.Fatalf("after subscribe bb, ccc, *: %d bytes, want %d", d.nameBytes, w("bb", "ccc"))
	}
	d.UpdateDelta(nil, []string{"bb", "ccc", "bb"})
	if d.nameBytes != 0 || len(d.names) != 0 {
		t.Fatalf("after unsubscribing everything: %d bytes, %d names", d.nameBytes, len(d.names))
	}
	s := NewSotw([]string{"a", "bb"}, false)
	if s.nameBytes != w("a", "bb") {
		t.Fatalf("SotW: %d bytes, want %d", s.nameBytes, w("a", "bb"))
	}
	s.SetSotw([]string{"ccc"})
	if s.nameBytes != w("ccc") {
		t.Fatalf("SotW after a new list: %d bytes, want %d", s.nameBytes, w("ccc"))
	}
}
