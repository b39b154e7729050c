package file

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func TestLateHandlerGetsEveryObject(t *testing.T) {
	e := newEnv(t, map[string]string{
		"gw.yaml": docs(gateway("b", "gw2", 80), gateway("a", "gw1", 80), gateway("a", "gw0", 80)),
		"se.yaml": serviceEntry("default", "se", "api.example.com"),
	}, nil)
	e.run()
	e.flush()
	if !e.c.HasSynced() {
		t.Fatal("HasSynced false after the initial load with no handlers")
	}

	// This is the ServiceEntry handler istiod's file mode registers too
	// late: it must still see every object.
	late := newRecorder(t)
	e.c.RegisterEventHandler(schema.ServiceEntry, late.handle)
	gws := newRecorder(t)
	e.c.RegisterEventHandler(schema.Gateway, gws.handle)
	late.expect("add ServiceEntry default/se")
	evs := gws.expect("add Gateway a/gw0", "add Gateway a/gw1", "add Gateway b/gw2")
	for _, ev := range evs {
		if ev.old.Kind != 0 || ev.cur.Spec == nil {
			t.Fatalf("replayed add %s has old=%v cur.Spec=%v", ev, ev.old.Key(), ev.cur.Spec)
		}
	}
	if !e.c.HasSynced() {
		t.Fatal("HasSynced went back to false")
	}

	// After the replay, the handler gets live events once.
	e.write("se.yaml", serviceEntry("default", "se", "api2.example.com"))
	late.expect("update ServiceEntry default/se")
	e.flush()
	late.expectNone()
	gws.expectNone()
}

func TestHasSyncedWaitsForHandlersRegisteredBeforeRun(t *testing.T) {
	e := newEnv(t, map[string]string{"gw.yaml": gateway("default", "gw", 80)}, nil)
	var mu sync.Mutex
	var seen []string
	var syncedDuringReplay []bool
	e.c.RegisterEventHandler(schema.Gateway, func(_, cur config.Config, ev model.Event) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ev.String()+" "+cur.Key().String())
		syncedDuringReplay = append(syncedDuringReplay, e.c.HasSynced())
	})
	e.run()
	e.flush()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"add Gateway default/gw"}) {
		t.Fatalf("handler saw %q", seen)
	}
	if syncedDuringReplay[0] {
		t.Fatal("HasSynced was true before the handler had the initial load")
	}
	if !e.c.HasSynced() {
		t.Fatal("HasSynced false after delivery")
	}
}

// view rebuilds the store from the events a handler receives, failing on
// any event that contradicts what it was told before.
type view struct {
	mu      sync.Mutex
	objects map[config.Key]config.Config
	bad     []string
	// done is closed when the final barrier value arrives.
	done      chan struct{}
	finalHost string
}

func newView(finalHost string) *view {
	return &view{objects: map[config.Key]config.Config{}, done: make(chan struct{}), finalHost: finalHost}
}

func (v *view) handle(old, cur config.Config, ev model.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key := cur.Key()
	prev, had := v.objects[key]
	switch ev {
	case model.EventAdd:
		if had {
			v.bad = append(v.bad, "second add of "+key.String())
		}
		v.objects[key] = cur
	case model.EventUpdate:
		if !had || !config.SameContent(prev, old) {
			v.bad = append(v.bad, fmt.Sprintf("update of %s from a state never delivered", key))
		}
		v.objects[key] = cur
	case model.EventDelete:
		if !had {
			v.bad = append(v.bad, "delete of unknown "+key.String())
		}
		delete(v.objects, key)
	}
	if key == barrierKey && cur.Spec != nil && ev != model.EventDelete {
		hosts := cur.Spec.(interface{ GetHosts() []string }).GetHosts()
		if len(hosts) == 1 && hosts[0] == v.finalHost {
			close(v.done)
		}
	}
}

// TestRegistrationRacesWithChanges registers handlers while files change
// and checks each handler's picture ends up exactly the store, with no
// event missed or delivered twice.
func TestRegistrationRacesWithChanges(t *testing.T) {
	e := newEnv(t, map[string]string{"seed.yaml": gateway("default", "seed", 80)}, nil)
	e.run()

	const rounds = 40
	const finalHost = "final.example.com"
	var views []*view
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range rounds {
			name := fmt.Sprintf("f%02d.yaml", i%7)
			switch i % 3 {
			case 0, 1:
				e.write(name, docs(gateway("default", fmt.Sprintf("gw%d", i%7), 80+i),
					virtualService("ns", fmt.Sprintf("vs%d", i%5), fmt.Sprintf("h%d.example.com", i))))
			case 2:
				e.remove(name)
			}
		}
	})
	for range 8 {
		v := newView(finalHost)
		views = append(views, v)
		for _, k := range schema.Kinds() {
			e.c.RegisterEventHandler(k, v.handle)
		}
	}
	wg.Wait()
	e.write("zzz-barrier.yaml", serviceEntry(barrierKey.Namespace, barrierKey.Name, finalHost))

	for i, v := range views {
		waitClosed(t, v.done)
		v.mu.Lock()
		if len(v.bad) > 0 {
			t.Errorf("view %d: %q", i, v.bad)
		}
		for _, k := range schema.Kinds() {
			var got []string
			for key := range v.objects {
				if key.Kind == k {
					got = append(got, key.String())
				}
			}
			slices.Sort(got)
			if want := keysOf(e.c.List(k, "")); !slices.Equal(got, want) {
				t.Errorf("view %d %s: handler saw %q, store has %q", i, k, got, want)
			}
		}
		v.mu.Unlock()
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-timeAfter():
		t.Fatal("timed out waiting for the final event")
	}
}
