package analysis_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/analysis"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/test/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/<case>.golden.txt from the analysis")

// analyze runs the analysis over one folder and renders its findings one a
// line, file names relative to the folder.
func analyze(t *testing.T, dir string, opts analysis.Options) ([]analysis.Finding, string) {
	t.Helper()
	l, err := analysis.LoadAll([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	opts.GatewayAPI = l.GatewayAPI
	fs := analysis.Findings(analysis.Analyze(l.Configs, l.Errors, opts), l.Contents)
	var b strings.Builder
	for _, f := range fs {
		rel, err := filepath.Rel(dir, f.File)
		if err != nil {
			t.Fatal(err)
		}
		f.File = rel
		b.WriteString(format(f) + "\n")
	}
	return fs, b.String()
}

func format(f analysis.Finding) string {
	s := fmt.Sprintf("%s:%d: %s: ", f.File, f.Line, f.Severity)
	if f.Kind != "" {
		s += f.Kind + " " + f.Namespace + "/" + f.Name + ": "
	}
	if f.Field != "" {
		s += f.Field + ": "
	}
	return s + f.Message
}

// Each folder testdata/<case>/ is analyzed; its findings must equal
// testdata/<case>.golden.txt. `make golden` rewrites them.
func TestGolden(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(entries, func(e os.DirEntry) bool { return !e.IsDir() })); n < 3 {
		t.Fatalf("found %d cases under testdata", n)
	}
	golden.RunDirs(t, "testdata", ".golden.txt", *update, func(t *testing.T, dir string) []byte {
		var opts analysis.Options
		// A case may come with the mesh config it is analyzed with.
		if data, err := os.ReadFile(dir + ".mesh.yaml"); err == nil {
			m, err := mesh.Parse(mesh.FileSource(dir+".mesh.yaml"), data)
			if err != nil {
				t.Fatal(err)
			}
			opts.Mesh = m
		}
		_, got := analyze(t, dir, opts)
		return []byte(got)
	})
}

// A clean folder has no findings; each broken object is found at the line
// of its offending field, and the good objects of the same file are still
// analyzed (the VirtualService naming a missing Gateway).
func TestFindingsAndLines(t *testing.T) {
	fs, _ := analyze(t, "testdata/clean", analysis.Options{})
	if len(fs) != 0 {
		t.Errorf("clean folder: %v", fs)
	}
	if analysis.HasErrors(fs) {
		t.Error("HasErrors on no findings")
	}

	fs, _ = analyze(t, "testdata/invalid", analysis.Options{})
	want := map[string]struct {
		line     int
		severity string
	}{
		"broken.yaml|spec.http[0].route[0].weight":    {16, analysis.SeverityError},
		"broken.yaml|spec.http[0].match[0].uri.regex": {29, analysis.SeverityError},
		"broken.yaml|apiVersion":                      {33, analysis.SeverityError},
		"gateway.yaml|":                               {1, analysis.SeverityError}, // the Gateway again: broken.yaml came first
	}
	found := map[string]bool{}
	for _, f := range fs {
		k := filepath.Base(f.File) + "|" + f.Field
		if w, ok := want[k]; ok {
			found[k] = true
			if f.Line != w.line || f.Severity != w.severity {
				t.Errorf("%s: line %d %s, want line %d %s (%s)", k, f.Line, f.Severity, w.line, w.severity, f.Message)
			}
		}
	}
	for k := range want {
		if !found[k] {
			t.Errorf("no finding %s in %v", k, fs)
		}
	}
	if !analysis.HasErrors(fs) {
		t.Error("HasErrors false with errors")
	}
	unparsable := false
	for _, f := range fs {
		if filepath.Base(f.File) == "unparsable.yaml" && f.Line == 1 && strings.Contains(f.Message, "YAML") {
			unparsable = true
		}
	}
	if !unparsable {
		t.Errorf("no finding for the unparsable file at line 1: %v", fs)
	}
}

// The warnings of point 1: routes that never match (after a catch-all,
// repeating an earlier match), a host bound by two VirtualServices on one
// gateway, destinations and subsets and Gateways that do not exist.
func TestUnreachableAndMissing(t *testing.T) {
	fs, _ := analyze(t, "testdata/unreachable", analysis.Options{})
	checks := []struct{ name, field, contains string }{
		{"shop", "spec.http[1].match[0]", "same match conditions"},
		{"shop", "spec.http[3]", "matches every request"},
		{"shop-too", "spec.hosts", "also bound by VirtualService default/shop"},
		{"shop-too", "spec.http[0].route[0].destination.host", "no service is defined for host cart.default.svc.cluster.local"},
		{"shop", "spec.gateways[1]", "Gateway istio-system/missing does not exist"},
	}
	for _, c := range checks {
		ok := false
		for _, f := range fs {
			if f.Name == c.name && f.Field == c.field && strings.Contains(f.Message, c.contains) && f.Line > 0 {
				ok = true
			}
		}
		if !ok {
			t.Errorf("no finding on %s %s containing %q in:\n%v", c.name, c.field, c.contains, fs)
		}
	}
}

// Proxyless findings come only when asked for: the server translates for
// gRPC clients only once one connects.
func TestProxylessOnRequest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dr.yaml"), []byte(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: default}
spec:
  hosts: [ext.example.com]
  resolution: DNS
  ports: [{number: 443, name: tls, protocol: TLS}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: ext, namespace: default}
spec:
  host: ext.example.com
  trafficPolicy: {tls: {mode: SIMPLE}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if fs, _ := analyze(t, dir, analysis.Options{}); len(fs) != 0 {
		t.Errorf("without Proxyless: %v", fs)
	}
	fs, _ := analyze(t, dir, analysis.Options{Proxyless: true})
	if len(fs) == 0 {
		t.Error("with Proxyless: no findings for a DestinationRule gRPC clients cannot follow")
	}
}

// Short hosts are completed with Options.DomainSuffix, as the server
// completes them with --domain-suffix: a VirtualService and a
// DestinationRule naming "reviews" find the service of a cluster whose
// domain is example.internal only when the analysis is told so.
func TestDomainSuffix(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shop.yaml"), []byte(suffixYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if fs, _ := analyze(t, dir, analysis.Options{DomainSuffix: "example.internal"}); len(fs) != 0 {
		t.Errorf("with DomainSuffix example.internal: %v", fs)
	}
	_, out := analyze(t, dir, analysis.Options{})
	if !strings.Contains(out, "no service is defined for host reviews.default.svc.cluster.local") {
		t.Errorf("with the default suffix, want reviews reported missing under cluster.local:\n%s", out)
	}
}

const suffixYAML = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: default}
spec:
  hosts: [reviews.default.svc.example.internal]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: default}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: default}
spec:
  hosts: [shop.example.com]
  gateways: [public]
  http:
  - route: [{destination: {host: reviews, subset: v1, port: {number: 9080}}}]
`

// Two files defining one Gateway API object: as the server's folder does,
// the first by path is used and the other is reported at its line; the
// duplicate's listener is not converted.
func TestLoadAllGatewayAPIDuplicate(t *testing.T) {
	dir := t.TempDir()
	gateway := func(port int) string {
		return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: wayfinder-%d}
spec: {controllerName: wayfinder.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: wayfinder-1
  listeners: [{name: http, port: %d, protocol: HTTP}]
`, port, port)
	}
	for name, port := range map[string]int{"a.yaml": 1, "b.yaml": 2} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(gateway(port)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := analysis.LoadAll([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var gateways []string
	for _, o := range l.GatewayAPI {
		if o.Kind.Name == "Gateway" {
			gateways = append(gateways, o.Source)
		}
	}
	if len(gateways) != 1 || !strings.Contains(gateways[0], "a.yaml") {
		t.Errorf("Gateways used %v, want the one of a.yaml alone", gateways)
	}
	_, out := analyze(t, dir, analysis.Options{})
	if !strings.Contains(out, "b.yaml:6") || !strings.Contains(out, "Gateway default/edge: duplicate of the definition in "+filepath.Join(dir, "a.yaml")) {
		t.Errorf("findings:\n%s\nwant the duplicate in b.yaml reported at its line, naming a.yaml", out)
	}
}
