package featuretest

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/heap"
	"github.com/wayfinder-dev/wayfinder/pkg/test/poll"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

var (
	largeRoutes  = flag.Int("large-routes", 20000, "routes in the large VirtualService of TestLargeInputMemoryReturns (100000 for the full case)")
	largeProfile = flag.String("large-heap-profiles", "", "folder for heap profiles before, with and after the large input")
)

// bigRoutesYAML is one VirtualService of n routes on the public gateway.
func bigRoutesYAML(n int) string {
	var b strings.Builder
	b.WriteString(`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: big, namespace: default}
spec:
  hosts: [big.example.com]
  gateways: [istio-system/public]
  http:
`)
	for i := range n {
		fmt.Fprintf(&b, "  - match: [{uri: {prefix: /route-%07d}}]\n    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v1, port: {number: 9080}}}]\n", i)
	}
	return b.String()
}

// heapAt takes the heap in use after a collection, returning freed pages
// to the system, and writes a profile named what when asked to.
func heapAt(t *testing.T, what string) uint64 {
	t.Helper()
	debug.FreeOSMemory()
	h := heap.AfterGC()
	if *largeProfile != "" {
		f, err := os.Create(filepath.Join(*largeProfile, what+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// bigBodiesYAML is one VirtualService of n routes, each answering with a
// body of size bytes: n x size bytes served.
func bigBodiesYAML(n, size int) string {
	var b strings.Builder
	b.WriteString(`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: big, namespace: default}
spec:
  hosts: [big.example.com]
  gateways: [istio-system/public]
  http:
`)
	body := strings.Repeat("x", size)
	for i := range n {
		fmt.Fprintf(&b, "  - match: [{uri: {prefix: /route-%07d}}]\n    directResponse: {status: 200, body: {string: %q}}\n", i, body)
	}
	return b.String()
}

// bigConfigMapYAML is a ConfigMap of one key of size bytes.
func bigConfigMapYAML(size int) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: default}\ndata:\n  blob: " +
		strings.Repeat("x", size) + "\n"
}

// Large input served to a gateway and removed leaves the heap where it
// was: nothing keeps the old pushes' routes, encodings or parsed
// documents.
func TestLargeInputMemoryReturns(t *testing.T) {
	n := *largeRoutes
	last := fmt.Sprintf("/route-%07d", n-1)
	cases := []struct {
		name string
		yaml func() string
		// served holds once the gateway has it (nil: it is never served).
		served func(adsc.State) bool
	}{
		{"routes", func() string { return bigRoutesYAML(n) }, func(s adsc.State) bool { return hasPrefix(s, "http.80", "big.example.com:80", last) }},
		{"bodies", func() string { return bigBodiesYAML(49, 1<<20-64) }, func(s adsc.State) bool {
			return hasPrefix(s, "http.80", "big.example.com:80", "/route-0000048")
		}},
		{"one-body", func() string { return bigBodiesYAML(1, 50<<20) }, nil},
		{"configmap", func() string { return bigConfigMapYAML(50 << 20) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.served == nil {
				t.Skip("writes and parses 50 MiB")
			}
			largeInputCase(t, tc.name, tc.yaml, tc.served)
		})
	}
}

func largeInputCase(t *testing.T, name string, yaml func() string, served func(adsc.State) bool) {
	e := &env{t: t, dir: t.TempDir()}
	for name, data := range baseFiles() {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir, Logger: serverenv.Logger(t, slog.LevelWarn)})
	gw := e.gateway("gw-1", publicLabels, nil)
	waitFor(t, gw, "initial config", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})
	// The same edit as at the end, so whatever the first of its kind
	// allocates for good is in the baseline too.
	e.write("routes.yaml", routesYAML("/before"))
	waitFor(t, gw, "an edit", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/before") })
	base := heapAt(t, name+"-before")

	e.write("big.yaml", yaml())
	if served != nil {
		serverenv.WaitFor(t, gw, "the large input", 5*time.Minute, served)
	} else {
		poll.Until(t, "the large input reported", func() bool { return e.configProblem("big.yaml") }, poll.Timeout(5*time.Minute), poll.Interval(20*time.Millisecond))
	}
	with := heapAt(t, name+"-with")

	e.remove("big.yaml")
	if served != nil {
		waitFor(t, gw, "the large input removed", func(s adsc.State) bool {
			return len(routePrefixes(s, "http.80")["big.example.com:80"]) == 0
		})
	} else {
		poll.Until(t, "the large input's problem cleared", func() bool { return !e.configProblem("big.yaml") }, poll.Timeout(waitTimeout), poll.Interval(20*time.Millisecond))
	}
	removed := heapAt(t, name+"-removed")
	e.write("routes.yaml", routesYAML("/after"))
	waitFor(t, gw, "a later edit", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/after") })
	after := heapAt(t, name+"-after")
	t.Logf("%s: heap %.1f MiB before, %.1f MiB with, %.1f MiB once removed, %.1f MiB after a later push", name, mib(base), mib(with), mib(removed), mib(after))
	if removed > base+16<<20 {
		t.Errorf("heap %.1f MiB once the large input was removed and pushed, %.1f MiB before: more than 16 MiB kept", mib(removed), mib(base))
	}
	if after > base+16<<20 {
		t.Errorf("heap %.1f MiB a push after the large input was removed, %.1f MiB before: more than 16 MiB kept", mib(after), mib(base))
	}
}

// A config file that cannot be read keeps serving what it served and is
// reported in /debug/configz and wayfinder_config_errors at once: here a
// named pipe put in its place (which root, running CI, cannot read past
// either), and a file of mode 000 when the test does not run as root.
func TestUnreadableConfigFileReported(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	for name, data := range baseFiles() {
		e.write(name, data)
	}
	e.server = serverenv.StartServer(t, bootstrap.Options{ConfigDir: e.dir, Logger: serverenv.Logger(t, slog.LevelWarn)})
	gw := e.gateway("gw-1", publicLabels, nil)
	waitFor(t, gw, "initial config", func(s adsc.State) bool {
		return allACKed(s) && hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})

	e.remove("routes.yaml")
	if err := syscall.Mkfifo(filepath.Join(e.dir, "routes.yaml"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	start := time.Now()
	poll.Until(t, "the named pipe reported", func() bool { return e.configProblem("cannot read file: a named pipe") }, poll.Timeout(waitTimeout), poll.Interval(20*time.Millisecond))
	t.Logf("reported %v after the pipe replaced the file", time.Since(start).Round(time.Millisecond))
	if os.Geteuid() != 0 {
		if err := os.Chmod(filepath.Join(e.dir, "gateways.yaml"), 0); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "the file of mode 000 reported", func() bool { return e.configProblem("cannot read file: permission denied") }, poll.Timeout(waitTimeout), poll.Interval(20*time.Millisecond))
	}
	_, metrics := e.get("/metrics")
	if !strings.Contains(metrics, `wayfinder_config_errors{kind="none",origin="source",severity="error"}`) {
		t.Errorf("wayfinder_config_errors counts no source error:\n%s", metrics)
	}
	// Another file's edit is pushed; the unreadable one's routes stay.
	e.write("later.yaml", strings.NewReplacer("name: bookinfo", "name: later", "bookinfo.example.com", "later.example.com").Replace(routesYAML("/later")))
	s := waitFor(t, gw, "a later edit", func(s adsc.State) bool { return hasPrefix(s, "http.80", "later.example.com:80", "/later") })
	if !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") {
		t.Errorf("the unreadable file's VirtualService is no longer served: %v", routePrefixes(s, "http.80"))
	}
}

// configProblem reports whether /debug/configz lists a problem of file.
func (e *env) configProblem(file string) bool {
	_, body := e.get("/debug/configz")
	return strings.Contains(body, file)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
