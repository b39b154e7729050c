// Package imports pins the walls between Wayfinder's layers: config flows
// one way, from sources through translators to the server, and a lower
// layer never imports a higher one. The rules are written down in
// docs/architecture.md ("Layers"); this test fails on any import that
// breaks one, naming the rule, so a wall is moved on purpose or not at all.
package imports

import (
	"bufio"
	"bytes"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/wayfinder-dev/wayfinder/"

// rule forbids packages matched by from to import packages matched by to.
type rule struct {
	name string
	from func(pkg string) bool
	to   func(imp string) bool
}

func under(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
}

func and(fs ...func(string) bool) func(string) bool {
	return func(p string) bool {
		for _, f := range fs {
			if !f(p) {
				return false
			}
		}
		return true
	}
}

func not(a func(string) bool) func(string) bool { return func(p string) bool { return !a(p) } }

// testSupport are packages whose purpose is helping tests (a package
// named …test, or pkg/test/…): they may reach up to start what they test.
func testSupport(p string) bool {
	return under("pkg/test")(p) || strings.HasSuffix(p, "test")
}

var (
	libraries   = and(under("pkg"), not(testSupport))
	model       = under("pilot/pkg/model")
	sources     = and(under("pilot/pkg/config", "pilot/pkg/serviceregistry"), not(under("pilot/pkg/config/analysis")))
	translators = and(under("pilot/pkg/networking"), not(testSupport))
	server      = under("pilot/pkg/xds")
	assembly    = under("pilot/pkg/bootstrap", "pilot/cmd")
	suites      = under("tests", "tools")
	kubeClients = under("k8s.io/client-go")
)

var rules = []rule{
	{"libraries (pkg/) never import pilot/, manifests/, tests/ or tools/", libraries,
		under("pilot", "manifests", "tests", "tools")},
	{"test support (pkg/test/) never imports tests/ or tools/", under("pkg/test"), under("tests", "tools")},
	{"model imports no other pilot/ package", model, and(under("pilot"), not(model))},
	{"sources never import translators, the server or the assembly", sources,
		under("pilot/pkg/networking", "pilot/pkg/xds", "pilot/pkg/bootstrap", "pilot/cmd", "pilot/pkg/cli")},
	{"translators never import sources, the server, the assembly or Kubernetes clients", translators,
		under("pilot/pkg/config", "pilot/pkg/serviceregistry", "pilot/pkg/credentials", "pilot/pkg/security",
			"pilot/pkg/xds", "pilot/pkg/bootstrap", "pilot/cmd", "pilot/pkg/cli", "pkg/kube")},
	{"the server never imports sources or the assembly", server,
		under("pilot/pkg/config", "pilot/pkg/serviceregistry", "pilot/pkg/bootstrap", "pilot/cmd", "pilot/pkg/cli")},
	{"only commands (and test support) import the assembly", and(not(assembly), not(testSupport)),
		under("pilot/pkg/bootstrap", "pilot/cmd")},
	{"only the assembly (and test support) imports the server", and(not(server), not(assembly), not(testSupport)),
		under("pilot/pkg/xds")},
	{"nothing outside tests/ and tools/ imports them", not(suites), under("tests", "tools")},
	{"tools/ never import tests/", under("tools"), under("tests")},
}

type pkgImports struct {
	path    string
	imports []string
}

func goList(t *testing.T, args ...string) []pkgImports {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []pkgImports
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkgs = append(pkgs, pkgImports{path: f[0], imports: f[1:]})
	}
	return pkgs
}

// TestLayers checks every package's non-test imports against the rules.
func TestLayers(t *testing.T) {
	pkgs := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is the module root ../..?", len(pkgs))
	}
	report(t, violations(pkgs))
}

// violations returns every import of pkgs that breaks a rule, as
// "from imports to: rule".
func violations(pkgs []pkgImports) []string {
	var broken []string
	for _, p := range pkgs {
		from, ok := strings.CutPrefix(p.path, module)
		if !ok {
			continue
		}
		for _, imp := range p.imports {
			local, inModule := strings.CutPrefix(imp, module)
			if !inModule {
				if translators(from) && kubeClients(imp) {
					broken = append(broken, from+" imports "+imp+": translators never import Kubernetes clients")
				}
				continue
			}
			for _, r := range rules {
				if r.from(from) && r.to(local) {
					broken = append(broken, from+" imports "+local+": "+r.name)
				}
			}
		}
	}
	return broken
}

// The rules catch the imports that once ran against the flow, and let the
// ones along it pass.
func TestRulesCatchBackEdges(t *testing.T) {
	m := func(from string, imports ...string) pkgImports {
		p := pkgImports{path: module + from}
		for _, i := range imports {
			if !strings.Contains(i, ".") {
				i = module + i
			}
			p.imports = append(p.imports, i)
		}
		return p
	}
	for _, tc := range []struct {
		pkg    pkgImports
		broken bool
	}{
		{m("pilot/pkg/config/kube/status", "pilot/pkg/xds"), true},
		{m("pilot/pkg/config/analysis", "pilot/pkg/xds"), true},
		{m("pilot/pkg/xds", "pilot/pkg/config/gatewayapi"), true},
		{m("pilot/pkg/cli", "pilot/pkg/xds"), true},
		{m("tools/bench", "tests/kube/harness"), true},
		{m("pkg/config/manifest", "manifests"), true},
		{m("pkg/queue", "pilot/pkg/model"), true},
		{m("pilot/pkg/model", "pilot/pkg/networking/route"), true},
		{m("pilot/pkg/networking/route", "pilot/pkg/config/file"), true},
		{m("pilot/pkg/networking/route", "k8s.io/client-go/kubernetes"), true},
		{m("pilot/pkg/networking/route", "pkg/kube/kclient"), true},
		{m("pilot/pkg/xds/debug", "pilot/pkg/bootstrap"), true},
		{m("pkg/test/serverenv", "tests/kube"), true},
		// Along the flow.
		{m("pilot/pkg/xds", "pilot/pkg/networking/core", "pilot/pkg/model", "pkg/config"), false},
		{m("pilot/pkg/networking/listener", "pilot/pkg/networking/route", "pilot/pkg/model"), false},
		{m("pilot/pkg/config/file", "pilot/pkg/model", "pkg/queue"), false},
		{m("pilot/pkg/bootstrap", "pilot/pkg/xds", "pilot/pkg/config/file"), false},
		{m("pkg/test/serverenv", "pilot/pkg/bootstrap"), false},
		{m("tools/bench", "pkg/test/apiserver", "pilot/pkg/model"), false},
		{m("pilot/pkg/config/analysis", "pilot/pkg/networking/core"), false},
	} {
		if got := violations([]pkgImports{tc.pkg}); (len(got) > 0) != tc.broken {
			t.Errorf("%s importing %v: violations %v, want broken=%v", tc.pkg.path, tc.pkg.imports, got, tc.broken)
		}
	}
}

// TestCLIDoesNotLinkTheServer checks the operator's tool links neither the
// discovery server nor the assembly: it reads the debug endpoints' JSON
// through the types-only package they share.
func TestCLIDoesNotLinkTheServer(t *testing.T) {
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}", "./pilot/cmd/wayfinder")
	var broken []string
	for _, d := range deps {
		local, ok := strings.CutPrefix(d.path, module)
		if !ok {
			continue
		}
		if under("pilot/pkg/xds", "pilot/pkg/bootstrap")(local) {
			broken = append(broken, "pilot/cmd/wayfinder links "+local)
		}
	}
	report(t, broken)
}

func report(t *testing.T, broken []string) {
	t.Helper()
	sort.Strings(broken)
	broken = compact(broken)
	for _, b := range broken {
		t.Error(b)
	}
	if len(broken) > 0 {
		t.Log("the layers are described in docs/architecture.md (Layers)")
	}
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
