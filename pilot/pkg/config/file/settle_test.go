package file

import (
	"os"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// settleEnv is a controller on a fake clock with the watcher off: the test
// scans by hand (rescan) and moves time itself.
func settleEnv(t *testing.T, files map[string]string) (*env, *recorder, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, files, func(o *Options) {
		o.Clock = clk
		o.RescanInterval = time.Hour
		o.disableWatch = true
	})
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	return e, rec, clk
}

// scanNow scans and waits for the scan's events to be delivered.
func (e *env) scanNow() {
	e.t.Helper()
	e.c.rescan()
	e.flush()
}

func (e *env) truncate(rel string) {
	e.t.Helper()
	if err := os.Truncate(e.path(rel), 0); err != nil {
		e.t.Fatal(err)
	}
}

// writeInPlace rewrites a file without replacing it, as `cat >` does.
func (e *env) writeInPlace(rel, content string) {
	e.t.Helper()
	if err := os.WriteFile(e.path(rel), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// A rewrite caught between truncate and write serves what the file served
// before; the new content is taken in once it has stayed the same for the
// settle window, counted from when it was first seen.
func TestSettleRewriteInPlace(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80)})
	rec.expect("add Gateway default/gw")

	e.truncate("a.yaml")
	e.scanNow()
	clk.Step(defaultSettle / 2)
	e.scanNow()
	rec.expectNone()

	// Half written: parses, with fewer objects than it will have.
	e.writeInPlace("a.yaml", docs(gateway("default", "gw", 81)))
	e.scanNow()
	clk.Step(defaultSettle / 2)
	e.scanNow()
	rec.expectNone()
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 80 {
		t.Fatal("content taken in before it settled")
	}

	e.writeInPlace("a.yaml", docs(gateway("default", "gw", 81), virtualService("default", "vs", "a.example.com")))
	e.scanNow()
	clk.Step(defaultSettle - time.Millisecond)
	e.scanNow()
	rec.expectNone()
	clk.Step(time.Millisecond)
	e.scanNow()
	ev := rec.expect("update Gateway default/gw", "add VirtualService default/vs")[0]
	if gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("port = %d, want 81", gatewayPort(t, &ev.cur))
	}
}

// The settle timer scans by itself when a change is due: no file event or
// periodic rescan is needed to take a settled change in.
func TestSettleTimerScans(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80)})
	rec.expect("add Gateway default/gw")
	e.writeInPlace("a.yaml", gateway("default", "gw", 81))
	e.drainScans()
	e.c.rescan()
	e.waitScan()
	clk.Step(defaultSettle)
	rec.expect("update Gateway default/gw")
}

// A file left empty keeps its objects through the empty grace, then they
// are removed with a warning naming the file and each object.
func TestEmptyFileGrace(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{
		"a.yaml": docs(gateway("default", "gw", 80), virtualService("default", "vs", "a.example.com")),
	})
	rec.expect("add Gateway default/gw", "add VirtualService default/vs")

	e.writeInPlace("a.yaml", "# being saved\n---\n")
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	clk.Step(defaultEmptyGrace - defaultSettle - time.Millisecond)
	e.scanNow()
	rec.expectNone()
	if strings.Contains(e.logs.String(), "stayed empty") {
		t.Fatal("removal logged before the grace ran out")
	}

	clk.Step(time.Millisecond)
	e.scanNow()
	rec.expect("delete Gateway default/gw", "delete VirtualService default/vs")
	var line string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "stayed empty") {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "file=" + e.path("a.yaml"), "Gateway default/gw", "VirtualService default/vs"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q does not contain %q", line, want)
		}
	}
}

// Content that comes back within the grace restores nothing and removes
// nothing: handlers see no event at all.
func TestEmptyThenRefilledIsNoEvent(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80)})
	rec.expect("add Gateway default/gw")
	e.truncate("a.yaml")
	e.scanNow()
	clk.Step(defaultEmptyGrace / 2)
	e.scanNow()
	e.writeInPlace("a.yaml", gateway("default", "gw", 80))
	e.scanNow()
	clk.Step(defaultEmptyGrace)
	e.scanNow()
	rec.expectNone()
	if e.c.Get(schema.Gateway, "default", "gw") == nil {
		t.Fatal("object lost")
	}
}

// A removed file, or a new one, is taken in once that has settled; a file
// removed and put back within the window changes nothing.
func TestSettleRemoveAndAdd(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"a.yaml": gateway("default", "gw", 80)})
	rec.expect("add Gateway default/gw")

	e.remove("a.yaml")
	e.scanNow()
	clk.Step(defaultSettle / 2)
	e.write("a.yaml", gateway("default", "gw", 80))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expectNone()

	e.remove("a.yaml")
	e.write("b.yaml", virtualService("default", "vs", "a.example.com"))
	e.scanNow()
	rec.expectNone()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("delete Gateway default/gw", "add VirtualService default/vs")
	if !strings.Contains(e.logs.String(), "config file removed") {
		t.Error("removal not logged")
	}
}

func TestSettleOptionsDefaults(t *testing.T) {
	e := newEnv(t, nil, nil)
	if e.c.opts.Settle != 100*time.Millisecond || e.c.opts.EmptyGrace != time.Second {
		t.Fatalf("Settle, EmptyGrace = %v, %v; want 100ms, 1s", e.c.opts.Settle, e.c.opts.EmptyGrace)
	}
	e = newEnv(t, nil, func(o *Options) { o.Settle = 3 * time.Second })
	if e.c.opts.EmptyGrace != 3*time.Second {
		t.Fatalf("EmptyGrace = %v, want raised to Settle", e.c.opts.EmptyGrace)
	}
}
