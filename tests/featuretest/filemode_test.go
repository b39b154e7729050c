package featuretest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/debugapi"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/test/serverenv"
)

// routeGuard inspects every route and listener response a client receives:
// a route (virtual host and prefix) or listener once served must be in
// every later response. It never rejects; it records.
type routeGuard struct {
	mu         sync.Mutex
	routes     map[string]bool
	listeners  map[string]bool
	responses  int
	violations []string
}

func newRouteGuard() *routeGuard {
	return &routeGuard{routes: map[string]bool{}, listeners: map[string]bool{}}
}

func (g *routeGuard) check(typeURL string, resources []*anypb.Any) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := map[string]bool{}
	var seen map[string]bool
	switch typeURL {
	case adsc.RouteType:
		seen = g.routes
		for _, a := range resources {
			rc := &routev3.RouteConfiguration{}
			if err := a.UnmarshalTo(rc); err != nil {
				return err
			}
			for _, vh := range rc.GetVirtualHosts() {
				for _, r := range vh.GetRoutes() {
					if p, ok := r.GetMatch().GetPathSpecifier().(*routev3.RouteMatch_Prefix); ok {
						now[rc.GetName()+" "+vh.GetName()+" "+p.Prefix] = true
					}
				}
			}
		}
	case adsc.ListenerType:
		seen = g.listeners
		for _, a := range resources {
			name, err := adscResourceName(a)
			if err != nil {
				return err
			}
			now[name] = true
		}
	default:
		return nil
	}
	g.responses++
	for k := range seen {
		if !now[k] {
			g.violations = append(g.violations, fmt.Sprintf("response %d (%s) lost %s", g.responses, adsc.ShortName(typeURL), k))
		}
	}
	for k := range now {
		seen[k] = true
	}
	return nil
}

func adscResourceName(a *anypb.Any) (string, error) {
	m, err := a.UnmarshalNew()
	if err != nil {
		return "", err
	}
	if n, ok := m.(interface{ GetName() string }); ok {
		return n.GetName(), nil
	}
	return "", fmt.Errorf("resource %s has no name", a.GetTypeUrl())
}

func (g *routeGuard) result() (int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.responses, slices.Clone(g.violations)
}

// vsYAML is VirtualService name for host on the public gateway, one route
// per prefix.
func vsYAML(name, host string, prefixes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: %s, namespace: default}
spec:
  hosts: [%s]
  gateways: [istio-system/public]
  http:
`, name, host)
	for _, p := range prefixes {
		fmt.Fprintf(&b, "  - match: [{uri: {prefix: %s}}]\n    route: [{destination: {host: reviews.default.svc.cluster.local, subset: v1, port: {number: 9080}}}]\n", p)
	}
	return b.String()
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeSlowly writes content into p in place (truncate, then write) in two
// parts with a pause between them, as a slow `cat >` or a config tool
// does; split is where the first part ends.
func writeSlowly(t *testing.T, p, content string, split int, pause time.Duration) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	mustDo(t, err)
	defer f.Close()
	_, err = f.WriteString(content[:split])
	mustDo(t, err)
	// The pause is the stimulus (a writer slower than the settle window),
	// not a wait for the server: what the server does meanwhile is checked
	// on every response by the guard.
	time.Sleep(pause)
	_, err = f.WriteString(content[split:])
	mustDo(t, err)
	mustDo(t, f.Close())
}

func swapSymlink(t *testing.T, target, link string) {
	t.Helper()
	mustDo(t, os.Symlink(target, link+".tmp~"))
	mustDo(t, os.Rename(link+".tmp~", link))
}

// File-mode writes of every kind a user's tools make (in-place rewrite
// with a slow writer, a partial write, an emptied file refilled, a rename
// over, a folder deleted and recreated, a symlinked folder replaced, a
// ConfigMap ..data swap, a symlink loop) never make a served route or
// listener disappear: a gateway client checks every response it gets.
func TestFileWritesNeverWithdrawRoutes(t *testing.T) {
	const settle = 100 * time.Millisecond
	dir := t.TempDir()
	outside := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		serverenv.WriteFile(t, p, data)
	}
	routes := []string{"/reviews"}
	write("gateways.yaml", gatewaysYAML)
	write("services.yaml", servicesYAML)
	write("routes.yaml", vsYAML("bookinfo", "bookinfo.example.com", routes...))
	write("team/team.yaml", vsYAML("team", "team.example.com", "/team"))
	mustDo(t, os.MkdirAll(filepath.Join(outside, "v1"), 0o755))
	serverenv.WriteFile(t, filepath.Join(outside, "v1", "linked.yaml"), vsYAML("linked", "linked.example.com", "/linked"))
	mustDo(t, os.Symlink(filepath.Join(outside, "v1"), filepath.Join(dir, "linked")))
	// A ConfigMap volume's layout: visible names link through ..data.
	write("..cm_1/cm.yaml", vsYAML("cm", "cm.example.com", "/cm"))
	mustDo(t, os.Symlink("..cm_1", filepath.Join(dir, "..data")))
	mustDo(t, os.Symlink(filepath.Join("..data", "cm.yaml"), filepath.Join(dir, "cm.yaml")))

	// A long empty grace, so that only the settle window is exercised here
	// (the grace itself is unit-tested on a fake clock).
	server := serverenv.StartServer(t, bootstrap.Options{ConfigDir: dir, ConfigSettle: settle, ConfigEmptyGrace: 10 * time.Second})
	e := &env{t: t, dir: dir, server: server}
	guard := newRouteGuard()
	c := e.gateway("gw-1", publicLabels, guard.check)
	served := func(what, vhost, prefix string) {
		t.Helper()
		waitFor(t, c, what, func(s adsc.State) bool { return hasPrefix(s, "http.80", vhost, prefix) })
	}
	served("initial routes", "bookinfo.example.com:80", "/reviews")
	for _, vh := range []string{"team", "linked", "cm"} {
		served("initial "+vh, vh+".example.com:80", "/"+vh)
	}
	bookinfo := filepath.Join(dir, "routes.yaml")
	step := func(n int) string {
		routes = append(routes, fmt.Sprintf("/step-%d", n))
		return vsYAML("bookinfo", "bookinfo.example.com", routes...)
	}

	// In-place rewrite: truncated, then written after a pause longer than
	// the settle window.
	writeSlowly(t, bookinfo, step(1), 0, 3*settle)
	served("in-place rewrite", "bookinfo.example.com:80", "/step-1")

	// A partial write that does not parse yet (cut inside a flow mapping).
	content := step(2)
	writeSlowly(t, bookinfo, content, strings.LastIndex(content, "{prefix: /step-2")+5, 3*settle)
	served("partial write completed", "bookinfo.example.com:80", "/step-2")

	// Emptied by a failed save (no documents at all), then written again.
	mustDo(t, os.WriteFile(bookinfo, []byte("# saving...\n"), 0o644))
	time.Sleep(3 * settle) // stimulus: the file stays empty past the settle window
	mustDo(t, os.WriteFile(bookinfo, []byte(step(3)), 0o644))
	served("refilled after empty", "bookinfo.example.com:80", "/step-3")

	// Rename over: a temp file renamed onto the name.
	start := time.Now()
	write("routes.yaml", step(4))
	served("rename over", "bookinfo.example.com:80", "/step-4")
	// A figure, not a goal: the settle window is most of it.
	t.Logf("a rename-over edit reached the gateway in %v (settle window %v)", time.Since(start).Round(time.Millisecond), settle)

	// The folder deleted and made again, then a new file in it.
	mustDo(t, os.RemoveAll(filepath.Join(dir, "team")))
	write("team/team.yaml", vsYAML("team", "team.example.com", "/team", "/step-5"))
	served("recreated folder", "team.example.com:80", "/step-5")
	write("team/more.yaml", vsYAML("more", "more.example.com", "/more"))
	served("file in the recreated folder", "more.example.com:80", "/more")

	// A symlinked folder replaced, then a new file in its new target.
	mustDo(t, os.MkdirAll(filepath.Join(outside, "v2"), 0o755))
	serverenv.WriteFile(t, filepath.Join(outside, "v2", "linked.yaml"), vsYAML("linked", "linked.example.com", "/linked", "/step-6"))
	swapSymlink(t, filepath.Join(outside, "v2"), filepath.Join(dir, "linked"))
	served("replaced symlinked folder", "linked.example.com:80", "/step-6")
	serverenv.WriteFile(t, filepath.Join(outside, "v2", "extra.yaml"), vsYAML("extra", "extra.example.com", "/extra"))
	served("file in the new link target", "extra.example.com:80", "/extra")

	// A ConfigMap update: new folder, ..data swapped, old folder removed.
	write("..cm_2/cm.yaml", vsYAML("cm", "cm.example.com", "/cm", "/step-7"))
	swapSymlink(t, "..cm_2", filepath.Join(dir, "..data"))
	mustDo(t, os.RemoveAll(filepath.Join(dir, "..cm_1")))
	served("ConfigMap ..data swap", "cm.example.com:80", "/step-7")

	// A symlink loop is reported, and changes still go through.
	loop := filepath.Join(dir, "team", "loop")
	mustDo(t, os.Symlink(dir, loop))
	write("routes.yaml", step(8))
	served("change after a symlink loop", "bookinfo.example.com:80", "/step-8")
	if cz := e.configz(); !slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
		return ce.Source == loop && strings.Contains(ce.Message, "symlink loop")
	}) {
		t.Errorf("configz errors do not report the loop at %s: %+v", loop, cz.Errors)
	}

	n, violations := guard.result()
	if len(violations) > 0 {
		t.Fatalf("routes or listeners disappeared:\n%s", strings.Join(violations, "\n"))
	}
	if n < 10 {
		t.Fatalf("the guard saw only %d route/listener responses", n)
	}
	t.Logf("checked %d route and listener responses", n)
}

// A new file that sorts first and reuses a served VirtualService's name
// does not take its routes over: no response ever carries the newcomer's
// route while the first definition stands, and configz names both files.
// When the first goes away, the newcomer takes over.
func TestNewcomerDoesNotTakeOverAName(t *testing.T) {
	e := newEnv(t, map[string]string{
		"gateways.yaml": gatewaysYAML,
		"services.yaml": servicesYAML,
		"routes.yaml":   vsYAML("bookinfo", "bookinfo.example.com", "/reviews"),
	})
	var mu sync.Mutex
	hijacked := 0
	c := e.gateway("gw-1", publicLabels, func(typeURL string, res []*anypb.Any) error {
		for _, a := range res {
			rc := &routev3.RouteConfiguration{}
			if typeURL == adsc.RouteType && a.UnmarshalTo(rc) == nil && strings.Contains(rc.String(), "/hijack") {
				mu.Lock()
				hijacked++
				mu.Unlock()
			}
		}
		return nil
	})
	waitFor(t, c, "initial", func(s adsc.State) bool { return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews") })

	e.write("aaa.yaml", vsYAML("bookinfo", "bookinfo.example.com", "/hijack"))
	// Another change after it, so the newcomer has been read when it shows.
	e.write("zzz.yaml", vsYAML("later", "later.example.com", "/later"))
	waitFor(t, c, "the later change", func(s adsc.State) bool { return hasPrefix(s, "http.80", "later.example.com:80", "/later") })
	mu.Lock()
	n := hijacked
	mu.Unlock()
	if n > 0 {
		t.Fatalf("%d responses carried the newcomer's route", n)
	}
	if cz := e.configz(); !slices.ContainsFunc(cz.Errors, func(ce debugapi.ConfigzError) bool {
		return strings.HasSuffix(ce.Source, "aaa.yaml (document 1)") && strings.Contains(ce.Message, filepath.Join(e.dir, "routes.yaml"))
	}) {
		t.Errorf("configz does not report aaa.yaml as a duplicate of routes.yaml: %+v", cz.Errors)
	}

	e.remove("routes.yaml")
	waitFor(t, c, "the newcomer taking over", func(s adsc.State) bool {
		return hasPrefix(s, "http.80", "bookinfo.example.com:80", "/hijack") && !hasPrefix(s, "http.80", "bookinfo.example.com:80", "/reviews")
	})
}
