package file

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/queue"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestNewRejectsBadDir(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := New(Options{Dir: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing dir: err = %v, want one naming %s", err, missing)
	}
	file := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(file, []byte(gateway("default", "gw", 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Dir: file}); err == nil || !strings.Contains(err.Error(), file) ||
		!strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file as dir: err = %v, want one naming %s as not a directory", err, file)
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("empty Dir accepted")
	}
}

const seJSON = `{"apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry",
 "metadata": {"name": "se", "namespace": "default"},
 "spec": {"hosts": ["api.example.com"], "location": "MESH_EXTERNAL", "resolution": "DNS",
          "ports": [{"number": 443, "name": "https", "protocol": "TLS"}]}}`

func TestInitialLoad(t *testing.T) {
	e := newEnv(t, map[string]string{
		"gateways.yaml":         docs(gateway("default", "gw-b", 80), gateway("default", "gw-a", 8080)),
		"routes/prod/vs.yml":    virtualService("prod", "vs", "a.example.com"),
		"se.json":               seJSON,
		"ignored/.hidden.yaml":  gateway("default", "hidden", 80),
		".git/objects.yaml":     gateway("default", "in-hidden-dir", 80),
		"gateways.yaml~":        gateway("default", "backup", 80),
		".#gateways.yaml":       gateway("default", "emacs-lock", 80),
		"#gateways.yaml#":       gateway("default", "emacs-autosave", 80),
		".gateways.yaml.swp":    gateway("default", "vim-swap", 80),
		"notes.txt":             gateway("default", "not-config", 80),
		"empty.yaml":            "# nothing here\n",
		"routes/prod/README.md": "docs",
	}, nil)
	rec := newRecorder(t)
	rec.registerAll(e.c)
	if e.c.HasSynced() {
		t.Fatal("HasSynced before anything was delivered")
	}
	e.run()
	rec.expect(
		"add Gateway default/gw-a",
		"add Gateway default/gw-b",
		"add VirtualService prod/vs",
		"add ServiceEntry default/se",
	)
	e.flush()
	if !e.c.HasSynced() {
		t.Fatal("HasSynced false after the initial load was delivered")
	}
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors = %v, want none", errs)
	}

	if got, want := keysOf(e.c.List(schema.Gateway, "")), []string{"Gateway default/gw-a", "Gateway default/gw-b"}; !slices.Equal(got, want) {
		t.Fatalf("List(Gateway) = %q, want %q", got, want)
	}
	if got := keysOf(e.c.List(schema.VirtualService, "prod")); !slices.Equal(got, []string{"VirtualService prod/vs"}) {
		t.Fatalf("List(VirtualService, prod) = %q", got)
	}
	if got := e.c.List(schema.VirtualService, "default"); len(got) != 0 {
		t.Fatalf("List(VirtualService, default) = %q, want none", keysOf(got))
	}
	if got := e.c.List(schema.DestinationRule, ""); len(got) != 0 {
		t.Fatalf("List(DestinationRule) = %q, want none", keysOf(got))
	}

	gw := e.c.Get(schema.Gateway, "default", "gw-b")
	if gatewayPort(t, gw) != 80 {
		t.Fatalf("gw-b port = %d", gatewayPort(t, gw))
	}
	if want := filepath.Join(e.dir, "gateways.yaml") + " (document 1)"; gw.Source != want {
		t.Fatalf("gw-b Source = %q, want %q", gw.Source, want)
	}
	if e.c.Get(schema.Gateway, "default", "missing") != nil || e.c.Get(schema.VirtualService, "default", "gw-a") != nil {
		t.Fatal("Get found an object that does not exist")
	}

	// Callers get their own slices and metadata: changing them leaves the
	// store alone.
	list := e.c.List(schema.Gateway, "")
	list[0].Name = "scribbled"
	gw.Name = "scribbled"
	if e.c.Get(schema.Gateway, "default", "gw-a") == nil || e.c.List(schema.Gateway, "")[0].Name != "gw-a" {
		t.Fatal("mutating a returned value changed the store")
	}
}

func TestGetAndListServeBeforeRun(t *testing.T) {
	e := newEnv(t, map[string]string{"gw.yaml": gateway("default", "gw", 80)}, nil)
	if e.c.Get(schema.Gateway, "default", "gw") == nil {
		t.Fatal("New did not load the directory")
	}
}

func TestExternalQueueIsRunByItsOwner(t *testing.T) {
	q := queue.New(queue.Options{})
	e := newEnv(t, map[string]string{"gw.yaml": gateway("default", "gw", 80)}, func(o *Options) { o.Queue = q })
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	if e.c.HasSynced() {
		t.Fatal("HasSynced although nobody runs the event queue")
	}
	startQueue(t, q)
	rec.expect("add Gateway default/gw")
	e.flush()
	if !e.c.HasSynced() {
		t.Fatal("HasSynced false once the owner ran the queue")
	}
}

func TestDefaultNamespaceFromParseOptions(t *testing.T) {
	noNS := strings.Replace(gateway("x", "gw", 80), "  namespace: x\n", "", 1)
	e := newEnv(t, map[string]string{"gw.yaml": noNS}, func(o *Options) { o.Parse.DefaultNamespace = "istio-system" })
	if e.c.Get(schema.Gateway, "istio-system", "gw") == nil {
		t.Fatal("object without a namespace did not get Parse.DefaultNamespace")
	}
}

func TestSymlinkedDirAndFiles(t *testing.T) {
	real := t.TempDir()
	if err := os.WriteFile(filepath.Join(real, "gw.yaml"), []byte(gateway("default", "gw", 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	// A ConfigMap volume: visible names are symlinks into a hidden dir.
	if err := os.Mkdir(filepath.Join(links, "..data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(links, "..data", "vs.yaml"), []byte(virtualService("default", "vs", "a.example.com")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "vs.yaml"), filepath.Join(links, "vs.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(links, "dirlink")); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Dir: links, validate: objects.ValidateByLabel})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(c.List(schema.VirtualService, "")); !slices.Equal(got, []string{"VirtualService default/vs"}) {
		t.Fatalf("symlinked file: List = %q", got)
	}
	// A symlinked folder is read under the link's path.
	if gw := c.Get(schema.Gateway, "default", "gw"); gw == nil || !strings.HasPrefix(gw.Source, filepath.Join(links, "dirlink", "gw.yaml")) {
		t.Fatalf("symlinked directory: got %v", gw)
	}

	rootLink := filepath.Join(t.TempDir(), "config")
	if err := os.Symlink(real, rootLink); err != nil {
		t.Fatal(err)
	}
	c, err = New(Options{Dir: rootLink, validate: objects.ValidateByLabel})
	if err != nil {
		t.Fatal(err)
	}
	gw := c.Get(schema.Gateway, "default", "gw")
	if gw == nil || !strings.HasPrefix(gw.Source, filepath.Join(rootLink, "gw.yaml")) {
		t.Fatalf("Dir as a symlink: got %v", gw)
	}
}

func TestValidatorPanicRejectsOnlyThatObject(t *testing.T) {
	e := newEnv(t, map[string]string{
		"a.yaml": docs(gateway("default", "boom", 80), gateway("default", "fine", 80)),
	}, func(o *Options) {
		o.validate = func(c config.Config) error {
			if c.Name == "boom" {
				panic("validator bug")
			}
			return nil
		}
	})
	if e.c.Get(schema.Gateway, "default", "boom") != nil || e.c.Get(schema.Gateway, "default", "fine") == nil {
		t.Fatal("a validator panic should reject its object and nothing else")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "validator bug") || errs[0].Key.Name != "boom" {
		t.Fatalf("ConfigErrors = %v, want the panic reported against boom", errs)
	}
}

func TestVanishedDirKeepsConfig(t *testing.T) {
	e := newEnv(t, map[string]string{"gw.yaml": gateway("default", "gw", 80)}, nil)
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	e.c.rescan()
	if e.c.Get(schema.Gateway, "default", "gw") == nil {
		t.Fatal("an unreadable directory deleted its config")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Source != e.dir {
		t.Fatalf("ConfigErrors = %v, want one naming %s", errs, e.dir)
	}
}

// TestUsesRealValidatorByDefault checks the wiring to pkg/config/validation:
// realistic manifests pass it, and a Gateway on port 0 does not.
func TestUsesRealValidatorByDefault(t *testing.T) {
	dir := t.TempDir()
	content := docs(gateway("default", "gw", 80), virtualService("default", "vs", "a.example.com"),
		serviceEntry("default", "se", "api.example.com"), gateway("default", "bad", 0))
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	errs := c.ConfigErrors()
	if len(errs) == 0 || errs[0].Key.Name != "bad" || errs[0].Field == "" {
		t.Fatalf("ConfigErrors = %v, want field errors for the port-0 Gateway only", errs)
	}
	for _, e := range errs {
		if e.Key.Name != "bad" {
			t.Errorf("realistic sample rejected: %v", e)
		}
	}
	if c.Get(schema.Gateway, "default", "bad") != nil || len(c.List(schema.Gateway, "")) != 1 {
		t.Fatal("the invalid Gateway was stored")
	}
}
