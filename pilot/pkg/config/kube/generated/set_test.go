package generated

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

// recorder keeps each delivered event, as "ev Kind ns/name".
type recorder struct{ got []string }

func (r *recorder) handler(_, cur config.Config, ev model.Event) {
	r.got = append(r.got, ev.String()+" "+cur.Key().String())
}

func (r *recorder) take() []string {
	out := r.got
	r.got = nil
	return out
}

func register(s *Set, r *recorder) {
	s.Register(schema.Gateway, r.handler)
	s.Register(schema.VirtualService, r.handler)
}

func TestReplaceEvents(t *testing.T) {
	var s Set
	var r recorder
	register(&s, &r)

	// Given in reverse order: events come sorted by kind, namespace, name.
	s.Replace([]config.Config{
		objects.VirtualService("b", "vs", "x"), objects.Gateway("b", "gw", "x"), objects.Gateway("a", "gw2", "x"), objects.Gateway("a", "gw1", "x"),
	}, nil)
	want := []string{
		model.EventAdd.String() + " Gateway a/gw1",
		model.EventAdd.String() + " Gateway a/gw2",
		model.EventAdd.String() + " Gateway b/gw",
		model.EventAdd.String() + " VirtualService b/vs",
	}
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("first replace: got %q, want %q", got, want)
	}

	// a/gw1 unchanged (a fresh but equal object), a/gw2 changed, b/gw
	// gone, b/vs unchanged, c/gw new.
	s.Replace([]config.Config{
		objects.Gateway("c", "gw", "y"), objects.Gateway("a", "gw2", "changed"), objects.Gateway("a", "gw1", "x"), objects.VirtualService("b", "vs", "x"),
	}, nil)
	want = []string{
		model.EventUpdate.String() + " Gateway a/gw2",
		model.EventDelete.String() + " Gateway b/gw",
		model.EventAdd.String() + " Gateway c/gw",
	}
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("second replace: got %q, want %q", got, want)
	}

	if got := s.List(schema.Gateway, ""); len(got) != 3 || got[0].Name != "gw1" || got[1].Name != "gw2" || got[2].Namespace != "c" {
		t.Fatalf("List after replace: %v", got)
	}
	if got := s.List(schema.Gateway, "a"); len(got) != 2 {
		t.Fatalf("List(a) = %d objects, want 2", len(got))
	}
	if s.Get(schema.Gateway, "b", "gw") != nil {
		t.Fatal("deleted Gateway b/gw still returned by Get")
	}
	if g := s.Get(schema.Gateway, "a", "gw2"); g == nil || g.Spec.(*networking.Gateway).Servers[0].Hosts[0] != "changed" {
		t.Fatalf("Get a/gw2 = %v, want the updated object", g)
	}
}

func TestReplaceUnchangedGivesNoEvent(t *testing.T) {
	var s Set
	var r recorder
	register(&s, &r)
	s.Replace([]config.Config{objects.Gateway("a", "gw", "x"), objects.VirtualService("a", "vs", "x")}, nil)
	r.take()
	// ResourceVersion is not content: a new conversion of the same input
	// must not push.
	again := objects.Gateway("a", "gw", "x")
	again.ResourceVersion = "42"
	s.Replace([]config.Config{objects.VirtualService("a", "vs", "x"), again}, nil)
	if got := r.take(); len(got) != 0 {
		t.Fatalf("unchanged content gave events %q", got)
	}
}

func TestDeleteCarriesTheOldObject(t *testing.T) {
	var s Set
	var old, cur []config.Config
	s.Register(schema.Gateway, func(o, c config.Config, ev model.Event) {
		if ev == model.EventDelete {
			old, cur = append(old, o), append(cur, c)
		}
	})
	s.Replace([]config.Config{objects.Gateway("a", "gw", "x")}, nil)
	s.Replace(nil, nil)
	if len(cur) != 1 || cur[0].Name != "gw" || old[0].Name != "gw" {
		t.Fatalf("delete event: old %v cur %v, want both the deleted Gateway", old, cur)
	}
}

func TestHandlersSeeTheNewContent(t *testing.T) {
	var s Set
	s.Replace([]config.Config{objects.Gateway("a", "old", "x")}, nil)
	var during [][]config.Config
	live := false // past the replayed add of a/old
	s.Register(schema.Gateway, func(_, _ config.Config, _ model.Event) {
		if live {
			during = append(during, s.List(schema.Gateway, ""))
		}
	})
	live = true
	s.Replace([]config.Config{objects.Gateway("a", "new1", "x"), objects.Gateway("a", "new2", "x")}, nil)
	// Three events (delete old, add new1, add new2); each handler call
	// sees the whole new content, never a half-applied one.
	if len(during) != 3 {
		t.Fatalf("handler called %d times, want 3", len(during))
	}
	for i, l := range during {
		if len(l) != 2 || l[0].Name != "new1" || l[1].Name != "new2" {
			t.Fatalf("call %d saw %v, want [new1 new2]", i, l)
		}
	}
}

func TestRegisterReplaysSortedAdds(t *testing.T) {
	var s Set
	s.Replace([]config.Config{objects.Gateway("b", "x"), objects.Gateway("a", "y"), objects.VirtualService("a", "vs")}, nil)
	var r recorder
	s.Register(schema.Gateway, r.handler)
	want := []string{model.EventAdd.String() + " Gateway a/y", model.EventAdd.String() + " Gateway b/x"}
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("replay: got %q, want %q", got, want)
	}
}

// A handler registered by another handler while events are delivered is
// not given the rest of that batch (the handlers were copied under the
// lock); it gets the stored content once, as adds, from Register.
func TestRegisterDuringDispatch(t *testing.T) {
	var s Set
	var late recorder
	registered := false
	s.Register(schema.Gateway, func(_, _ config.Config, _ model.Event) {
		if !registered {
			registered = true
			s.Register(schema.Gateway, late.handler)
		}
	})
	s.Replace([]config.Config{objects.Gateway("a", "gw1"), objects.Gateway("a", "gw2")}, nil)
	want := []string{model.EventAdd.String() + " Gateway a/gw1", model.EventAdd.String() + " Gateway a/gw2"}
	if got := late.take(); !slices.Equal(got, want) {
		t.Fatalf("late handler: got %q, want each object once: %q", got, want)
	}
}

func TestErrorsAreTheLastConversions(t *testing.T) {
	var s Set
	e1 := &config.Error{Source: "Ingress a/x", Message: "bad"}
	s.Replace(nil, []*config.Error{e1})
	got := s.Errors()
	if len(got) != 1 || got[0] != e1 {
		t.Fatalf("Errors = %v, want [%v]", got, e1)
	}
	got[0] = nil // a copy: the caller cannot change the Set
	if s.Errors()[0] != e1 {
		t.Fatal("Errors returned the Set's own slice")
	}
	s.Replace(nil, nil)
	if got := s.Errors(); len(got) != 0 {
		t.Fatalf("Errors after a clean conversion = %v, want none", got)
	}
}
