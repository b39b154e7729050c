package file

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func timeAfter() <-chan time.Time { return time.After(timeout) }

// TestRescanBackstop simulates a change the watcher missed: with fsnotify
// off, only the periodic rescan on the injected clock can find it.
func TestRescanBackstop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80)}, func(o *Options) {
		o.Clock = clk
		o.RescanInterval = time.Minute
		o.disableWatch = true
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	// Changed between New and Run: Run's first rescan picks it up. Run
	// creates its ticker before that rescan, so once this event is in the
	// ticker exists and stepping the clock will tick it.
	e.write("b.yaml", virtualService("default", "vs", "a.example.com"))
	e.drainScans()
	e.run()
	// The new file is taken in once it has settled.
	e.waitScan()
	clk.Step(defaultSettle)
	rec.expect("add Gateway default/gw", "add VirtualService default/vs")
	e.waitScan() // the settle rescan, done: the next waitScan is the tick's

	e.write("a.yaml", gateway("default", "gw", 81))
	e.remove("b.yaml")
	e.flush()
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 80 {
		t.Fatal("change seen without a watcher or a rescan")
	}
	e.drainScans()
	clk.Step(time.Minute)
	e.waitScan()
	clk.Step(defaultSettle)
	ev := rec.expect("update Gateway default/gw", "delete VirtualService default/vs")[0]
	if gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("port = %d, want 81", gatewayPort(t, &ev.cur))
	}
	e.waitScan() // the settle rescan, done

	// And again on the next tick.
	e.write("c.yaml", serviceEntry("default", "se", "api.example.com"))
	e.drainScans()
	clk.Step(time.Minute)
	e.waitScan()
	clk.Step(defaultSettle)
	rec.expect("add ServiceEntry default/se")
}

func TestDefaultRescanInterval(t *testing.T) {
	e := newEnv(t, nil, nil)
	if e.c.opts.RescanInterval != 30*time.Second {
		t.Fatalf("RescanInterval = %v, want 30s", e.c.opts.RescanInterval)
	}
}

func TestConfigErrorsSortedAndLoggedOnce(t *testing.T) {
	var b []string
	for i := 1; i <= 11; i++ {
		switch i {
		case 2, 10:
			b = append(b, "kind: [\n")
		default:
			b = append(b, gateway("default", "b"+strings.Repeat("x", i), 80))
		}
	}
	e, rec := started(t, map[string]string{
		"b.yaml": docs(b...),
		"a.yaml": docs("apiVersion: v1\nkind: [\n", invalid(gateway("default", "a", 80), "spec.servers")),
	}, "add Gateway default/bx", "add Gateway default/bxxx", "add Gateway default/bxxxx", "add Gateway default/bxxxxx",
		"add Gateway default/bxxxxxx", "add Gateway default/bxxxxxxx", "add Gateway default/bxxxxxxxx",
		"add Gateway default/bxxxxxxxxx", "add Gateway default/bxxxxxxxxxxx")

	var got []string
	for _, err := range e.c.ConfigErrors() {
		got = append(got, strings.TrimPrefix(err.Source, e.dir+"/"))
	}
	want := []string{"a.yaml (document 1)", "a.yaml (document 2)", "b.yaml (document 2)", "b.yaml (document 10)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("error sources = %q, want %q", got, want)
	}

	// Another rescan with the same problems logs nothing new.
	e.barrier(rec, 0)
	for _, src := range want {
		if n := problemLogs(e, src+":"); n != 1 {
			t.Fatalf("%s logged %d times, want once:\n%s", src, n, e.logs.String())
		}
	}

	// Fixed, the problems clear; broken again, they are new and logged again.
	e.write("a.yaml", gateway("default", "a", 80))
	rec.expect("add Gateway default/a")
	if n := len(e.c.ConfigErrors()); n != 2 {
		t.Fatalf("%d errors after fixing a.yaml, want b.yaml's 2", n)
	}
	e.write("a.yaml", docs("apiVersion: v1\nkind: [\n", invalid(gateway("default", "a", 80), "spec.servers")))
	e.barrier(rec, 1)
	rec.expectNone()
	for _, src := range want[:2] {
		if n := problemLogs(e, src+":"); n != 2 {
			t.Fatalf("%s logged %d times after breaking again, want 2", src, n)
		}
	}
	// The held-back file still reports its invalid document.
	if got := len(e.c.ConfigErrors()); got != 4 {
		t.Fatalf("%d errors, want 4: %v", got, e.c.ConfigErrors())
	}
	if e.c.Get(schema.Gateway, "default", "a") == nil {
		t.Fatal("a.yaml failed to parse but lost its last good object")
	}
}

// A rescan that finds nothing new leaves the store as it was (no new
// index, no events); one that only finds a change not yet settled does
// too; the settle window's rescan looks again at the pending file alone
// and takes it in.
func TestRescanWithoutChangesKeepsTheStore(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80), "b.yaml": virtualService("default", "vs", "a.example.com")}, func(o *Options) {
		o.Clock = clk
		o.RescanInterval = time.Minute
		o.disableWatch = true
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.drainScans() // New's scan: the next is Run's first
	e.run()
	e.waitScan()
	rec.expect("add Gateway default/gw", "add VirtualService default/vs")
	index := func() any {
		e.c.mu.RLock()
		defer e.c.mu.RUnlock()
		return e.c.index
	}
	before := index()
	e.drainScans()
	clk.Step(time.Minute)
	e.waitScan()
	if index() != before {
		t.Error("a rescan that found no change rebuilt the store's index")
	}

	e.write("a.yaml", gateway("default", "gw", 81))
	e.drainScans()
	clk.Step(time.Minute)
	e.waitScan() // sees the change, not yet settled
	if index() != before {
		t.Error("a change not yet settled rebuilt the store's index")
	}
	// b.yaml changes after that scan; the settle rescan looks at a.yaml only.
	e.write("b.yaml", virtualService("default", "vs", "b.example.com"))
	clk.Step(defaultSettle)
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("port = %d, want 81", gatewayPort(t, &ev.cur))
	}
	e.waitScan() // the settle rescan, done
	// The next full rescan finds b.yaml.
	e.drainScans()
	clk.Step(time.Minute)
	e.waitScan()
	clk.Step(defaultSettle)
	rec.expect("update VirtualService default/vs")
}
