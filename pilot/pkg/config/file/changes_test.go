package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// started returns a running env whose recorder has taken the initial adds.
func started(t *testing.T, files map[string]string, initial ...string) (*env, *recorder) {
	t.Helper()
	e := newEnv(t, files, nil)
	rec := newRecorder(t)
	rec.registerAll(e.c)
	e.run()
	rec.expect(initial...)
	return e, rec
}

func TestAddUpdateDeleteFile(t *testing.T) {
	e, rec := started(t, map[string]string{"a.yaml": gateway("default", "gw", 80)}, "add Gateway default/gw")

	e.write("b.yaml", docs(virtualService("default", "vs", "a.example.com"), serviceEntry("default", "se", "api.example.com")))
	rec.expect("add VirtualService default/vs", "add ServiceEntry default/se")

	e.write("a.yaml", gateway("default", "gw", 81))
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.old) != 80 || gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("update old/cur ports = %d/%d, want 80/81", gatewayPort(t, &ev.old), gatewayPort(t, &ev.cur))
	}
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 81 {
		t.Fatal("Get does not show the update")
	}

	// Per object, not per file: changing one document of b touches only it.
	e.write("b.yaml", docs(virtualService("default", "vs", "b.example.com"), serviceEntry("default", "se", "api.example.com")))
	rec.expect("update VirtualService default/vs")

	e.remove("b.yaml")
	evs := rec.expect("delete VirtualService default/vs", "delete ServiceEntry default/se")
	if evs[0].cur.Name != "vs" || evs[0].cur.Spec == nil {
		t.Fatalf("delete carries %+v, want the last known object", evs[0].cur)
	}
	if e.c.Get(schema.VirtualService, "default", "vs") != nil || len(e.c.List(schema.ServiceEntry, "")) != 0 {
		t.Fatal("deleted objects still listed")
	}
	e.barrier(rec, 0)
	rec.expectNone()
}

func TestPlainWritesAreCoalesced(t *testing.T) {
	e, rec := started(t, nil)
	// os.WriteFile truncates then writes: the rescan must see the result.
	if err := os.WriteFile(e.path("gw.yaml"), []byte(gateway("default", "gw", 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.expect("add Gateway default/gw")
	if err := os.WriteFile(e.path("gw.yaml"), []byte(gateway("default", "gw", 81)), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.cur) != 81 {
		t.Fatalf("port = %d, want 81", gatewayPort(t, &ev.cur))
	}
}

func TestRewriteThatChangesNothingFiresNothing(t *testing.T) {
	original := gateway("default", "gw", 80)
	e, rec := started(t, map[string]string{"a.yaml": original}, "add Gateway default/gw")

	e.write("a.yaml", original)
	// Same content, different text: comments, spacing, resourceVersion.
	reformatted := "# reformatted\n" + strings.Replace(original, "  name: gw\n", "  name: gw\n  resourceVersion: \"7\"\n", 1)
	reformatted = strings.ReplaceAll(reformatted, "- \"*\"", "- '*'")
	e.write("a.yaml", reformatted)
	e.barrier(rec, 0)
	rec.expectNone()

	// The store still moved to the new text's metadata, and a handler
	// registered now is replayed that version.
	if gw := e.c.Get(schema.Gateway, "default", "gw"); gw.ResourceVersion != "7" {
		t.Fatalf("ResourceVersion = %q, want 7", gw.ResourceVersion)
	}
	late := newRecorder(t)
	e.c.RegisterEventHandler(schema.Gateway, late.handle)
	if ev := late.expect("add Gateway default/gw")[0]; ev.cur.ResourceVersion != "7" {
		t.Fatalf("late handler got ResourceVersion %q, want 7", ev.cur.ResourceVersion)
	}
}

func TestMalformedFileKeepsLastGoodObjects(t *testing.T) {
	e, rec := started(t, map[string]string{
		"a.yaml":     docs(gateway("default", "gw", 80), virtualService("default", "vs", "a.example.com")),
		"other.yaml": serviceEntry("default", "se", "api.example.com"),
	}, "add Gateway default/gw", "add VirtualService default/vs", "add ServiceEntry default/se")

	// Half an edit: the gateway changed, the second document is broken.
	e.write("a.yaml", docs(gateway("default", "gw", 81), "kind: [unclosed\n"))
	e.barrier(rec, 0)
	rec.expectNone()
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 80 {
		t.Fatal("a file that failed to parse changed its objects")
	}
	if e.c.Get(schema.VirtualService, "default", "vs") == nil {
		t.Fatal("a file that failed to parse lost its objects")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 {
		t.Fatalf("ConfigErrors = %v, want one", errs)
	}
	if want := e.path("a.yaml") + " (document 2)"; errs[0].Source != want || !strings.Contains(errs[0].Error(), want) {
		t.Fatalf("error %q does not name %q", errs[0].Error(), want)
	}
	if n := problemLogs(e, "a.yaml (document 2)"); n != 1 {
		t.Fatalf("problem logged %d times, want once:\n%s", n, e.logs.String())
	}

	// Another file's changes go through while a.yaml is broken.
	e.write("other.yaml", serviceEntry("default", "se", "api2.example.com"))
	rec.expect("update ServiceEntry default/se")

	// Fixing the file applies the change and clears the error.
	e.write("a.yaml", docs(gateway("default", "gw", 81), virtualService("default", "vs", "a.example.com")))
	rec.expect("update Gateway default/gw")
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors after fix = %v", errs)
	}

	// Deleting a broken file still deletes what it held.
	e.write("a.yaml", "apiVersion: [\n")
	e.barrier(rec, 1)
	rec.expectNone()
	if len(e.c.ConfigErrors()) != 1 {
		t.Fatalf("ConfigErrors = %v, want one", e.c.ConfigErrors())
	}
	e.remove("a.yaml")
	rec.expect("delete Gateway default/gw", "delete VirtualService default/vs")
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors after delete = %v", errs)
	}
}

func TestNewFileWithABadDocumentLoadsTheRest(t *testing.T) {
	e, rec := started(t, nil)
	e.write("a.yaml", docs(gateway("default", "gw", 80), "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n  name: x\n"))
	rec.expect("add Gateway default/gw")
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Source != e.path("a.yaml")+" (document 2)" || errs[0].Field != "apiVersion" {
		t.Fatalf("ConfigErrors = %v, want the unknown kind in document 2", errs)
	}
}

func TestInvalidObjectKeepsLastGoodVersion(t *testing.T) {
	e, rec := started(t, map[string]string{"a.yaml": gateway("default", "gw", 80)}, "add Gateway default/gw")

	const field = "spec.servers[0].port.number"
	e.write("a.yaml", invalid(gateway("default", "gw", 81), field))
	// A new object that is invalid from the start is simply absent.
	e.write("b.yaml", invalid(virtualService("default", "vs", "a.example.com"), "spec.hosts[0]"))
	e.barrier(rec, 0)
	rec.expectNone()
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 80 {
		t.Fatal("invalid update replaced the last good version")
	}
	if e.c.Get(schema.VirtualService, "default", "vs") != nil {
		t.Fatal("an object that never validated is in the store")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 2 {
		t.Fatalf("ConfigErrors = %v, want two", errs)
	}
	gwKey := config.Key{Kind: schema.Gateway, Namespace: "default", Name: "gw"}
	if errs[0].Source != e.path("a.yaml")+" (document 1)" || errs[0].Key != gwKey || errs[0].Field != field {
		t.Fatalf("error %+v, want a.yaml document 1, %s, field %s", errs[0], gwKey, field)
	}
	if !strings.Contains(errs[1].Error(), "b.yaml (document 1): VirtualService default/vs: spec.hosts[0]: rejected") {
		t.Fatalf("error %q lacks file, document, object or field", errs[1].Error())
	}

	e.write("a.yaml", gateway("default", "gw", 82))
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.old) != 80 || gatewayPort(t, &ev.cur) != 82 {
		t.Fatalf("update ports %d -> %d, want 80 -> 82", gatewayPort(t, &ev.old), gatewayPort(t, &ev.cur))
	}
	if errs := e.c.ConfigErrors(); len(errs) != 1 || !strings.Contains(errs[0].Source, "b.yaml") {
		t.Fatalf("ConfigErrors = %v, want only b.yaml's", errs)
	}
	e.remove("b.yaml")
	e.barrier(rec, 1)
	rec.expectNone()
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors after removing b.yaml = %v", errs)
	}
}

func TestDuplicateKeyAcrossFiles(t *testing.T) {
	e, rec := started(t, map[string]string{
		"a.yaml":     gateway("default", "gw", 80),
		"sub/b.yaml": gateway("default", "gw", 90),
	}, "add Gateway default/gw")
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 80 {
		t.Fatal("the first path did not win")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Source != e.path("sub/b.yaml")+" (document 1)" ||
		!strings.Contains(errs[0].Error(), e.path("a.yaml")) || !strings.Contains(errs[0].Error(), "duplicate") {
		t.Fatalf("ConfigErrors = %v, want a duplicate naming both files", errs)
	}

	// The shadowed copy changing is not an event.
	e.write("sub/b.yaml", gateway("default", "gw", 91))
	e.barrier(rec, 0)
	rec.expectNone()

	// Removing the winner promotes the other definition.
	e.remove("a.yaml")
	ev := rec.expect("update Gateway default/gw")[0]
	if gatewayPort(t, &ev.old) != 80 || gatewayPort(t, &ev.cur) != 91 {
		t.Fatalf("promotion %d -> %d, want 80 -> 91", gatewayPort(t, &ev.old), gatewayPort(t, &ev.cur))
	}
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors = %v after the duplicate went away", errs)
	}
}

func TestDuplicateKeyWithinAFile(t *testing.T) {
	e := newEnv(t, map[string]string{"a.yaml": docs(gateway("default", "gw", 80), gateway("default", "gw", 81))}, nil)
	if gatewayPort(t, e.c.Get(schema.Gateway, "default", "gw")) != 80 {
		t.Fatal("the first document did not win")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Source != e.path("a.yaml")+" (document 2)" ||
		!strings.Contains(errs[0].Message, e.path("a.yaml")+" (document 1)") {
		t.Fatalf("ConfigErrors = %v, want document 2 reported as a duplicate of document 1", errs)
	}
}

func TestFileDeletedDeletesEachObject(t *testing.T) {
	e, rec := started(t, map[string]string{
		"keep.yaml": gateway("default", "keep", 80),
		"gone.yaml": docs(gateway("default", "gw", 80), virtualService("default", "vs", "a.example.com"),
			invalid(serviceEntry("default", "se", "api.example.com"), "spec.hosts")),
	}, "add Gateway default/gw", "add Gateway default/keep", "add VirtualService default/vs")
	if len(e.c.ConfigErrors()) != 1 {
		t.Fatalf("ConfigErrors = %v, want the invalid ServiceEntry", e.c.ConfigErrors())
	}
	e.remove("gone.yaml")
	rec.expect("delete Gateway default/gw", "delete VirtualService default/vs")
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors = %v after the file was deleted", errs)
	}
	if keysOf(e.c.List(schema.Gateway, ""))[0] != "Gateway default/keep" {
		t.Fatal("deleting one file touched another")
	}
}

func TestSubdirectoryCreatedLater(t *testing.T) {
	e, rec := started(t, nil)

	e.write("new/deeper/gw.yaml", gateway("default", "gw", 80))
	rec.expect("add Gateway default/gw")
	// The new directories are watched now: a further write is seen.
	e.write("new/deeper/vs.yaml", virtualService("default", "vs", "a.example.com"))
	rec.expect("add VirtualService default/vs")
	e.write("new/deeper/gw.yaml", gateway("default", "gw", 81))
	rec.expect("update Gateway default/gw")

	// A directory moved in from elsewhere, with a file already inside.
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "moved", "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "moved", "in", "se.yaml"), []byte(serviceEntry("default", "se", "api.example.com")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(outside, "moved"), e.path("moved")); err != nil {
		t.Fatal(err)
	}
	rec.expect("add ServiceEntry default/se")
	e.write("moved/in/se.yaml", serviceEntry("default", "se", "api2.example.com"))
	rec.expect("update ServiceEntry default/se")

	// Removing a directory deletes everything under it.
	e.remove("new")
	rec.expect("delete Gateway default/gw", "delete VirtualService default/vs")
}
