package file

import (
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

func vsHost(t *testing.T, c *config.Config) string {
	t.Helper()
	if c == nil {
		t.Fatal("VirtualService missing")
	}
	return c.Spec.(*networking.VirtualService).GetHosts()[0]
}

// A new file that sorts earlier and reuses a served VirtualService's name
// does not take it over; it is reported naming both files, and takes over
// only when the first definition goes away.
func TestNewcomerDoesNotTakeAName(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"b.yaml": virtualService("default", "vs", "old.example.com")})
	rec.expect("add VirtualService default/vs")

	e.write("a.yaml", virtualService("default", "vs", "new.example.com"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expectNone()
	if got := vsHost(t, e.c.Get(schema.VirtualService, "default", "vs")); got != "old.example.com" {
		t.Fatalf("served host = %s, want the first definition's old.example.com", got)
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Source != e.path("a.yaml")+" (document 1)" ||
		!strings.Contains(errs[0].Message, e.path("b.yaml")+" (document 1)") {
		t.Fatalf("ConfigErrors = %v, want a.yaml reported as a duplicate of b.yaml", errs)
	}

	// Rewriting the first definition keeps its place and its creation time.
	created := e.c.Get(schema.VirtualService, "default", "vs").CreationTimestamp
	e.write("b.yaml", virtualService("default", "vs", "old2.example.com"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	ev := rec.expect("update VirtualService default/vs")[0]
	if vsHost(t, &ev.cur) != "old2.example.com" || !ev.cur.CreationTimestamp.Equal(created) {
		t.Fatalf("after rewrite: host %s created %v, want old2.example.com created %v", vsHost(t, &ev.cur), ev.cur.CreationTimestamp, created)
	}

	e.remove("b.yaml")
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	ev = rec.expect("update VirtualService default/vs")[0]
	if vsHost(t, &ev.cur) != "new.example.com" {
		t.Fatalf("after the first went away: host %s, want new.example.com", vsHost(t, &ev.cur))
	}
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("ConfigErrors = %v, want none", errs)
	}
}

// A ServiceEntry host claimed by a newer ServiceEntry whose name sorts
// earlier stays with the older one (Istio's oldest-wins rule, with file
// mode's first-seen time as creation time); the report is on the newcomer.
func TestServiceEntryHostGoesToTheOlder(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"z.yaml": serviceEntry("default", "zzz-old", "api.example.com")})
	rec.expect("add ServiceEntry default/zzz-old")

	e.write("a.yaml", serviceEntry("default", "aaa-new", "api.example.com"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("add ServiceEntry default/aaa-new")

	old := e.c.Get(schema.ServiceEntry, "default", "zzz-old")
	newer := e.c.Get(schema.ServiceEntry, "default", "aaa-new")
	if !old.CreationTimestamp.Before(newer.CreationTimestamp) {
		t.Fatalf("creation times %v (old) and %v (new) are not in first-seen order", old.CreationTimestamp, newer.CreationTimestamp)
	}
	ps := model.NewPushContext(e.c)
	svc := ps.ServiceForHost("api.example.com")
	if svc == nil || svc.Source != old.Key() {
		t.Fatalf("api.example.com served by %v, want %v", svc, old.Key())
	}
	if len(ps.Errors) != 1 || ps.Errors[0].Key != newer.Key() || ps.Errors[0].Source != e.path("a.yaml")+" (document 1)" ||
		!strings.Contains(ps.Errors[0].Message, old.Key().String()) {
		t.Fatalf("push context errors = %v, want the newcomer reported naming the older one", ps.Errors)
	}

	// A rewrite of the older one does not make it a newcomer.
	e.write("z.yaml", strings.Replace(serviceEntry("default", "zzz-old", "api.example.com"), "number: 443", "number: 8443", 1))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("update ServiceEntry default/zzz-old")
	if got := model.NewPushContext(e.c).ServiceForHost("api.example.com"); got == nil || got.Source != old.Key() {
		t.Fatalf("after rewriting the older: api.example.com served by %v", got)
	}
}

// Moving an object to another file (rename) keeps its first-seen time, so
// it keeps what it held.
func TestMovedObjectKeepsItsAge(t *testing.T) {
	e, rec, clk := settleEnv(t, map[string]string{"b.yaml": serviceEntry("default", "zzz-old", "api.example.com")})
	rec.expect("add ServiceEntry default/zzz-old")
	e.write("c.yaml", serviceEntry("default", "aaa-new", "api.example.com"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	rec.expect("add ServiceEntry default/aaa-new")
	created := e.c.Get(schema.ServiceEntry, "default", "zzz-old").CreationTimestamp

	e.remove("b.yaml")
	e.write("d.yaml", serviceEntry("default", "zzz-old", "api.example.com"))
	e.scanNow()
	clk.Step(defaultSettle)
	e.scanNow()
	if got := e.c.Get(schema.ServiceEntry, "default", "zzz-old"); got == nil || !got.CreationTimestamp.Equal(created) {
		t.Fatalf("moved object: %v, want creation time %v kept", got, created)
	}
	if got := model.NewPushContext(e.c).ServiceForHost("api.example.com"); got == nil || got.Source.Name != "zzz-old" {
		t.Fatalf("api.example.com served by %v, want zzz-old", got)
	}
}

// Objects read in one scan (a start, say) share their first-seen time, so
// a ServiceEntry host they both claim goes by namespace and name, as for
// Kubernetes objects created in the same second, whatever the file layout.
func TestObjectsOfOneScanAreEquallyOld(t *testing.T) {
	e := newEnv(t, map[string]string{
		"a.yaml": serviceEntry("default", "zzz", "api.example.com"),
		"b.yaml": serviceEntry("default", "aaa", "api.example.com"),
	}, nil)
	zzz := e.c.Get(schema.ServiceEntry, "default", "zzz")
	aaa := e.c.Get(schema.ServiceEntry, "default", "aaa")
	if zzz.CreationTimestamp.IsZero() || !zzz.CreationTimestamp.Equal(aaa.CreationTimestamp) {
		t.Fatalf("creation times %v and %v, want one non-zero time", zzz.CreationTimestamp, aaa.CreationTimestamp)
	}
	ps := model.NewPushContext(e.c)
	if got := ps.ServiceForHost("api.example.com"); got == nil || got.Source != aaa.Key() {
		t.Fatalf("api.example.com served by %v, want %v", got, aaa.Key())
	}
}

// A creationTimestamp written in the manifest (as kubectl get -o yaml
// prints it) is kept; first-seen time fills in only when there is none.
func TestManifestCreationTimestampKept(t *testing.T) {
	se := strings.Replace(serviceEntry("default", "se", "api.example.com"), "metadata:\n", "metadata:\n  creationTimestamp: \"2020-01-02T03:04:05Z\"\n", 1)
	e := newEnv(t, map[string]string{"a.yaml": se}, nil)
	got := e.c.Get(schema.ServiceEntry, "default", "se")
	if got == nil || got.CreationTimestamp.Format("2006-01-02T15:04:05Z07:00") != "2020-01-02T03:04:05Z" {
		t.Fatalf("creation time = %v, want the manifest's", got)
	}
}
