package file

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/manifest"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// A scan that changed a few files resolves only their keys (resolveChanged)
// unless one of those keys is defined twice. Random edits to a handful of
// files that share a few names (so duplicates come and go, within a file
// and across files, with invalid and unparsable documents among them) must
// leave the controller exactly where resolving everything would: the same
// objects, index, duplicates and problems, and handlers told exactly the
// difference.
func TestChangedFilesResolveAsEverything(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2026))
	const files = 6
	doc := func() string {
		name := fmt.Sprintf("vs%d", rng.IntN(5))
		host := fmt.Sprintf("h%d.example.com", rng.IntN(2))
		switch r := rng.IntN(20); {
		case r < 12:
			return virtualService("default", name, host)
		case r < 16:
			return serviceEntry("default", fmt.Sprintf("se%d", rng.IntN(3)), host)
		case r < 18:
			return invalid(virtualService("default", name, host), "spec.hosts")
		case r < 19:
			return "kind: [unterminated\n"
		case r < 20 && rng.IntN(2) == 0:
			return httpRoute("default", fmt.Sprintf("r%d", rng.IntN(2)), host)
		default:
			return gateway("default", fmt.Sprintf("gw%d", rng.IntN(2)), 80+rng.IntN(2))
		}
	}
	content := func() string {
		var ds []string
		for range rng.IntN(4) {
			ds = append(ds, doc())
		}
		return docs(ds...)
	}
	initial := map[string]string{}
	for i := range files {
		initial[fmt.Sprintf("f%d.yaml", i)] = content()
	}
	e, rec, clk := settleEnv(t, initial)
	view := map[config.Key]config.Config{}
	apply := func() {
		for {
			select {
			case ev := <-rec.ch:
				k := ev.cur.Key()
				switch ev.event {
				case model.EventAdd, model.EventUpdate:
					view[k] = ev.cur
				case model.EventDelete:
					delete(view, k)
				}
			default:
				return
			}
		}
	}
	e.flush()
	apply()

	for step := range 300 {
		for range 1 + rng.IntN(2) {
			f := fmt.Sprintf("f%d.yaml", rng.IntN(files))
			if rng.IntN(6) == 0 {
				e.remove(f)
			} else {
				e.write(f, content())
			}
		}
		e.scanNow()
		clk.Step(2 * defaultEmptyGrace) // past the settle window and the empty grace
		e.c.rescanPending()
		e.flush()
		apply()
		checkResolution(t, step, e.c, view)
	}
	e.c.scanMu.Lock()
	n := e.c.resolved
	e.c.scanMu.Unlock()
	if n.changed < 100 || n.full < 20 {
		t.Errorf("scans resolved %d times for the changed files and %d times in full; the test must exercise both", n.changed, n.full)
	}
	t.Logf("resolved %d times for the changed files, %d times in full", n.changed, n.full)
}

// checkResolution holds c to a full resolution of its files, and view (the
// handlers' picture) to its objects.
func checkResolution(t *testing.T, step int, c *Controller, view map[config.Key]config.Config) {
	t.Helper()
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	full := resolve(c.files)
	same := func(a, b config.Config) bool { return a.Source == b.Source && a.Spec == b.Spec }
	objects := map[config.Key]config.Config{}
	for obj := range c.index.All() {
		objects[obj.Key()] = obj
	}
	if !maps.EqualFunc(objects, full.objects, same) {
		t.Fatalf("step %d: objects %v, resolving everything gives %v", step, sources(objects), sources(full.objects))
	}
	if !maps.Equal(c.dups, full.dups) {
		t.Fatalf("step %d: duplicate keys %v, want %v", step, c.dups, full.dups)
	}
	want := memory.New(slices.Collect(maps.Values(full.objects)))
	for _, k := range schema.Kinds() {
		if got, exp := c.List(k, ""), want.List(k, ""); !slices.EqualFunc(got, exp, same) {
			t.Fatalf("step %d: List(%s) = %v, want %v", step, k, keysOf(got), keysOf(exp))
		}
	}
	gwObjs, gwProblems := resolveGatewayAPI(c.files)
	problems := slices.Concat(c.walkProblems, fileErrors(c.files), full.dupProblems, gwProblems)
	sortErrors(problems)
	errText := func(errs []*config.Error) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Error())
		}
		return out
	}
	if got, exp := errText(c.ConfigErrors()), errText(problems); !slices.Equal(got, exp) {
		t.Fatalf("step %d: problems\n%q\nwant\n%q", step, got, exp)
	}
	gwKey := func(o manifest.GatewayAPIObject) string { return o.Key() + " " + o.Source }
	if got := c.GatewayAPIObjects(); !slices.Equal(mapped(got, gwKey), mapped(gwObjs, gwKey)) {
		t.Fatalf("step %d: Gateway API objects %v, want %v", step, mapped(got, gwKey), mapped(gwObjs, gwKey))
	}
	if !maps.EqualFunc(view, full.objects, config.SameContent) {
		t.Fatalf("step %d: handlers were told %v, the store holds %v", step, keyNames(slices.Collect(maps.Values(view))), keyNames(slices.Collect(maps.Values(full.objects))))
	}
}

// sources renders objects as their keys and sources, sorted.
func sources(objects map[config.Key]config.Config) []string {
	var out []string
	for k, obj := range objects {
		out = append(out, k.String()+" from "+obj.Source)
	}
	slices.Sort(out)
	return out
}

func mapped[T any](in []T, f func(T) string) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}

func httpRoute(ns, name, host string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: %s
  namespace: %s
spec:
  hostnames:
  - %s
`, name, ns, host)
}

// stamps keeps a few keys in a list and more in a map; either way each key
// has the stamp it was last given.
func TestStampsGetSetAll(t *testing.T) {
	var s stamps
	key := func(i int) config.Key {
		return config.Key{Kind: schema.VirtualService, Namespace: "default", Name: fmt.Sprintf("vs%d", i)}
	}
	at := func(i int) time.Time { return time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC) }
	for n := 1; n <= 3*stampsListMax; n++ {
		s.set(key(n-1), at(n-1))
		s.set(key(0), at(100)) // a key set again keeps one entry
		if (s.index != nil) != (n > stampsListMax) {
			t.Fatalf("%d keys: map in use %v", n, s.index != nil)
		}
		got := map[config.Key]time.Time{}
		for k, ts := range s.all() {
			got[k] = ts
		}
		if len(got) != n {
			t.Fatalf("%d keys set, all() yields %d", n, len(got))
		}
		for i := range n {
			want := at(i)
			if i == 0 {
				want = at(100)
			}
			if ts, ok := s.get(key(i)); !ok || !ts.Equal(want) || !got[key(i)].Equal(want) {
				t.Fatalf("%d keys: key %d has %v (%v), all() %v; want %v", n, i, ts, ok, got[key(i)], want)
			}
		}
		if _, ok := s.get(key(n)); ok {
			t.Fatalf("%d keys: a key never set has a stamp", n)
		}
	}
}

// OnBatch handlers run once per scan that changed something, after the
// scan's events and after what their handlers queued; a scan that
// changed nothing runs none.
func TestOnBatchRunsAfterTheScansEventsAndTheirTasks(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, map[string]string{"a.yaml": virtualService("default", "a", "a.example.com")}, func(o *Options) {
		o.Clock = clk
		o.RescanInterval = time.Hour
		o.disableWatch = true
	})
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	e.c.RegisterEventHandler(schema.VirtualService, func(_, cur config.Config, ev model.Event) {
		note(ev.String() + " " + cur.Name)
		e.c.queue.Push(func() error { note("task of " + cur.Name); return nil })
	})
	e.c.OnBatch(func() { note("batch") })
	e.run()
	e.flush()
	e.flush() // the batch task is queued by a task
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := log
		log = nil
		return out
	}
	// The initial load reaches handlers registered after New as a replay,
	// ordered by registration; what matters is the scans after it.
	if got := taken(); !slices.Contains(got, "add a") {
		t.Fatalf("initial load: %q", got)
	}

	e.write("b.yaml", virtualService("default", "b", "b.example.com"))
	e.write("c.yaml", virtualService("default", "c", "c.example.com"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.c.rescanPending()
	e.flush()
	e.flush()
	// The batch comes last, after both events and both tasks (each task
	// after its event).
	got := taken()
	idx := func(s string) int { return slices.Index(got, s) }
	if len(got) != 5 || idx("batch") != 4 || idx("add b") < 0 || idx("add c") < 0 ||
		idx("task of b") < idx("add b") || idx("task of c") < idx("add c") {
		t.Fatalf("a scan with two new files: %q", got)
	}

	e.scanNow() // nothing changed
	e.flush()
	e.flush()
	if got := taken(); len(got) != 0 {
		t.Fatalf("a scan that changed nothing: %q", got)
	}
}
