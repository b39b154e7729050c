package memory

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestListSortsAndFiltersByNamespace(t *testing.T) {
	s := New([]config.Config{objects.Gateway("b", "x"), objects.Gateway("a", "z"), objects.Gateway("a", "y"),
		{Meta: config.Meta{Kind: schema.VirtualService, Namespace: "a", Name: "vs"}, Spec: &networking.VirtualService{}}})
	var got []string
	for _, c := range s.List(schema.Gateway, "") {
		got = append(got, c.Namespace+"/"+c.Name)
	}
	want := []string{"a/y", "a/z", "b/x"}
	if len(got) != len(want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("List = %v, want %v", got, want)
		}
	}
	if n := len(s.List(schema.Gateway, "a")); n != 2 {
		t.Errorf("List(namespace a) has %d objects, want 2", n)
	}
	if n := len(s.List(schema.DestinationRule, "")); n != 0 {
		t.Errorf("List(DestinationRule) has %d objects, want 0", n)
	}
	if n := len(s.List(schema.VirtualService, "")); n != 1 {
		t.Errorf("List(VirtualService) has %d objects, want 1", n)
	}
}

// The push context sorts List's result in place (ConfigStore's contract:
// the slice is the caller's), so sorting it must not reorder the store.
func TestListGivesTheCallerItsOwnSlice(t *testing.T) {
	s := New([]config.Config{objects.Gateway("a", "x"), objects.Gateway("a", "y"), objects.Gateway("b", "z")})
	for _, ns := range []string{"", "a"} {
		got := s.List(schema.Gateway, ns)
		slices.Reverse(got)
		got[0].Name = "changed"
		if again := s.List(schema.Gateway, ns); again[0].Name != "x" || again[len(again)-1].Name == "changed" {
			t.Errorf("List(%q) after the caller reordered and changed its slice: %v", ns, again)
		}
	}
}

func TestGet(t *testing.T) {
	s := New([]config.Config{objects.Gateway("a", "y"), objects.Gateway("b", "x")})
	if c := s.Get(schema.Gateway, "b", "x"); c == nil || c.Name != "x" || c.Namespace != "b" {
		t.Errorf("Get(b/x) = %v", c)
	}
	if c := s.Get(schema.Gateway, "a", "x"); c != nil {
		t.Errorf("Get(a/x) = %v, want nil", c)
	}
	if c := s.Get(schema.VirtualService, "a", "y"); c != nil {
		t.Errorf("Get(VirtualService a/y) = %v, want nil", c)
	}
}

func TestLaterDuplicateWins(t *testing.T) {
	s := New([]config.Config{objects.Gateway("a", "x", "old.example.com"), objects.Gateway("a", "x", "new.example.com")})
	list := s.List(schema.Gateway, "")
	if len(list) != 1 {
		t.Fatalf("List has %d objects, want 1", len(list))
	}
	if h := list[0].Spec.(*networking.Gateway).GetServers()[0].GetHosts()[0]; h != "new.example.com" {
		t.Errorf("kept host %q, want the later object's new.example.com", h)
	}
}

func TestWithPutsAndDeletesWithoutChangingTheOriginal(t *testing.T) {
	vs := func(ns, name string) config.Config {
		return config.Config{Meta: config.Meta{Kind: schema.VirtualService, Namespace: ns, Name: name}, Spec: &networking.VirtualService{}}
	}
	s := New([]config.Config{objects.Gateway("a", "x", "old.example.com"), objects.Gateway("b", "y"), vs("a", "v")})
	n := s.With(
		[]config.Config{objects.Gateway("a", "x", "new.example.com"), objects.Gateway("a", "w"), objects.Gateway("c", "z"), {Meta: config.Meta{Kind: schema.ServiceEntry, Namespace: "a", Name: "se"}, Spec: &networking.ServiceEntry{}}},
		[]config.Key{{Kind: schema.Gateway, Namespace: "b", Name: "y"}, {Kind: schema.VirtualService, Namespace: "a", Name: "v"}, {Kind: schema.Gateway, Namespace: "q", Name: "absent"}},
	)
	names := func(cs []config.Config) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Namespace+"/"+c.Name)
		}
		return out
	}
	if got, want := names(n.List(schema.Gateway, "")), []string{"a/w", "a/x", "c/z"}; !slices.Equal(got, want) {
		t.Errorf("new store's Gateways = %v, want %v (sorted, replaced, added, deleted)", got, want)
	}
	if h := n.Get(schema.Gateway, "a", "x").Spec.(*networking.Gateway).GetServers()[0].GetHosts()[0]; h != "new.example.com" {
		t.Errorf("a/x in the new store has host %q, want the put one's", h)
	}
	if n.Get(schema.VirtualService, "a", "v") != nil || len(n.List(schema.VirtualService, "")) != 0 {
		t.Error("the deleted VirtualService is still in the new store")
	}
	if n.Get(schema.ServiceEntry, "a", "se") == nil {
		t.Error("the ServiceEntry, a kind the store did not hold, is missing")
	}
	// The original is as it was.
	if got, want := names(s.List(schema.Gateway, "")), []string{"a/x", "b/y"}; !slices.Equal(got, want) {
		t.Errorf("original Gateways = %v, want %v", got, want)
	}
	if h := s.Get(schema.Gateway, "a", "x").Spec.(*networking.Gateway).GetServers()[0].GetHosts()[0]; h != "old.example.com" {
		t.Errorf("original a/x has host %q after With", h)
	}
	if s.Get(schema.VirtualService, "a", "v") == nil || s.Get(schema.ServiceEntry, "a", "se") != nil {
		t.Error("With changed the original's other kinds")
	}
}

func TestAllYieldsEveryObjectByKindThenName(t *testing.T) {
	vs := config.Config{Meta: config.Meta{Kind: schema.VirtualService, Namespace: "a", Name: "v"}, Spec: &networking.VirtualService{}}
	s := New([]config.Config{vs, objects.Gateway("b", "y"), objects.Gateway("a", "x")})
	var got []string
	for c := range s.All() {
		got = append(got, c.Key().String())
	}
	gws := []string{"Gateway a/x", "Gateway b/y"}
	want := append(slices.Clone(gws), "VirtualService a/v")
	if schema.VirtualService < schema.Gateway {
		want = append([]string{"VirtualService a/v"}, gws...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
	for range s.All() {
		break // stopping early is allowed
	}
}
