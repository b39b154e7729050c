package file

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
	"github.com/wayfinder-dev/wayfinder/pkg/test/logbuf"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every wait; events normally arrive in milliseconds.
const timeout = 20 * time.Second

// env is one controller over a temp directory.
type env struct {
	t    *testing.T
	dir  string
	c    *Controller
	logs *logbuf.Buffer
	stop func()
	// scans receives a value after every scan.
	scans chan struct{}
}

// newEnv writes files (path -> content) into a temp dir and creates a
// controller over it; tweak may adjust the options first.
func newEnv(t *testing.T, files map[string]string, tweak func(*Options)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), logs: &logbuf.Buffer{}, scans: make(chan struct{}, 1000)}
	// A failed test shows what the controller logged: a watch it could
	// not add, a file it could not read.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", e.logs.String())
		}
	})
	for p, content := range files {
		e.write(p, content)
	}
	opts := Options{
		Dir:      e.dir,
		Logger:   slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		validate: objects.ValidateByLabel,
		scanned: func() {
			select {
			case e.scans <- struct{}{}:
			default:
			}
		},
	}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// run starts Run; it is stopped, and waited for, when the test ends.
func (e *env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.c.Run(ctx); close(done) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(timeout):
				e.t.Error("Run did not return after cancel")
			}
		})
	}
	e.t.Cleanup(e.stop)
}

// flush waits until every event queued so far has been delivered.
func (e *env) flush() {
	e.t.Helper()
	done := make(chan struct{})
	e.c.queue.Push(func() error { close(done); return nil })
	select {
	case <-done:
	case <-time.After(timeout):
		e.t.Fatal("event queue did not drain")
	}
}

// drainScans forgets the scans done so far.
func (e *env) drainScans() {
	for {
		select {
		case <-e.scans:
		default:
			return
		}
	}
}

// waitScan waits for a scan after the last drainScans or waitScan.
func (e *env) waitScan() {
	e.t.Helper()
	select {
	case <-e.scans:
	case <-time.After(timeout):
		e.t.Fatal("no scan happened")
	}
}

func (e *env) path(rel string) string { return filepath.Join(e.dir, filepath.FromSlash(rel)) }

// write replaces a file the way editors and kubectl do: write a hidden
// temp file, then rename it over the target.
func (e *env) write(rel, content string) {
	e.t.Helper()
	p := e.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(p), ".tmp-"+filepath.Base(p))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) remove(rel string) {
	e.t.Helper()
	if err := os.RemoveAll(e.path(rel)); err != nil {
		e.t.Fatal(err)
	}
}

// barrierKey sorts after every other key, so its event is the last one of
// the scan that sees it.
var barrierKey = config.Key{Kind: schema.ServiceEntry, Namespace: "zzz", Name: "zzz-barrier"}

// barrier writes a change and waits for its event on rec. Every file
// change made before it has then been scanned and its events received:
// rec must hold nothing else. This proves "no event" without sleeping.
func (e *env) barrier(rec *recorder, n int) {
	e.t.Helper()
	e.write("zzz-barrier.yaml", serviceEntry("zzz", "zzz-barrier", fmt.Sprintf("barrier-%d.example.com", n)))
	want := "add ServiceEntry zzz/zzz-barrier"
	if n > 0 {
		want = "update ServiceEntry zzz/zzz-barrier"
	}
	rec.expect(want)
}

// event is one handler call, rendered for comparison.
type event struct {
	event    model.Event
	old, cur config.Config
}

func (ev event) String() string {
	return fmt.Sprintf("%s %s", ev.event, ev.cur.Key())
}

// recorder is an event handler feeding a channel.
type recorder struct {
	t  *testing.T
	ch chan event
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{t: t, ch: make(chan event, 10000)}
}

func (r *recorder) handle(old, cur config.Config, ev model.Event) {
	r.ch <- event{event: ev, old: old, cur: cur}
}

// registerAll registers r for every kind.
func (r *recorder) registerAll(c *Controller) {
	for _, k := range schema.Kinds() {
		c.RegisterEventHandler(k, r.handle)
	}
}

func (r *recorder) next() event {
	r.t.Helper()
	select {
	case ev := <-r.ch:
		return ev
	case <-time.After(timeout):
		r.t.Fatal("timed out waiting for an event")
	}
	return event{}
}

// expect receives len(want) events and checks them in order.
func (r *recorder) expect(want ...string) []event {
	r.t.Helper()
	var got []event
	var names []string
	for range want {
		ev := r.next()
		got = append(got, ev)
		names = append(names, ev.String())
		if !slices.Equal(names, want[:len(names)]) {
			r.t.Fatalf("events = %q, want %q", names, want)
		}
	}
	return got
}

// expectNone fails if an event is waiting. Call after a barrier.
func (r *recorder) expectNone() {
	r.t.Helper()
	select {
	case ev := <-r.ch:
		r.t.Fatalf("unexpected event %s", ev)
	default:
	}
}

// Manifests. They are valid Istio config, so they should pass the real
// validator as well as the test one.

func gateway(ns, name string, port int) string {
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: %s
  namespace: %s
spec:
  selector:
    istio: ingressgateway
  servers:
  - port:
      number: %d
      name: http
      protocol: HTTP
    hosts:
    - "*"
`, name, ns, port)
}

func virtualService(ns, name, host string) string {
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: %s
  namespace: %s
spec:
  hosts:
  - %s
  gateways:
  - ingress
  http:
  - route:
    - destination:
        host: reviews.default.svc.cluster.local
        port:
          number: 8080
`, name, ns, host)
}

func serviceEntry(ns, name, host string) string {
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: %s
  namespace: %s
spec:
  hosts:
  - %s
  location: MESH_EXTERNAL
  resolution: DNS
  ports:
  - number: 443
    name: https
    protocol: TLS
`, name, ns, host)
}

// invalid marks a manifest for rejection by the test validator.
func invalid(manifest, field string) string {
	return strings.Replace(manifest, "metadata:\n", fmt.Sprintf("metadata:\n  labels:\n    %s: %q\n", objects.InvalidLabel, field), 1)
}

func docs(manifests ...string) string { return strings.Join(manifests, "---\n") }

func gatewayPort(t *testing.T, c *config.Config) uint32 {
	t.Helper()
	if c == nil {
		t.Fatal("object missing")
	}
	return c.Spec.(*networking.Gateway).GetServers()[0].GetPort().GetNumber()
}

func keysOf(list []config.Config) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Key().String())
	}
	return out
}

// startQueue runs a queue owned by the test.
func startQueue(t *testing.T, q *queue.Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// problemLogs counts the warnings logged about source.
func problemLogs(e *env, source string) int {
	n := 0
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, `msg="config problem"`) &&
			strings.Contains(line, source) {
			n++
		}
	}
	return n
}
