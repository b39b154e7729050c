package crdclient

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/config/validation"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestConvertSharesTheSpecAndSetsSource(t *testing.T) {
	in := vs("default", "reviews", "reviews.example.com")
	in.Labels = map[string]string{"app": "reviews"}
	in.Annotations = map[string]string{"note": "x"}
	in.ResourceVersion = "42"
	in.Generation = 3
	in.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg, meta, ok := convert(in)
	if !ok || meta != &in.ObjectMeta {
		t.Fatalf("convert(%T) = ok %v", in, ok)
	}
	want := config.Meta{Kind: schema.VirtualService, Name: "reviews", Namespace: "default",
		Labels: map[string]string{"app": "reviews"}, Annotations: map[string]string{"note": "x"},
		ResourceVersion: "42", Generation: 3, CreationTimestamp: in.CreationTimestamp.Time, Source: "kube://default/reviews"}
	if fmt.Sprint(cfg.Meta) != fmt.Sprint(want) {
		t.Errorf("meta = %+v\nwant %+v", cfg.Meta, want)
	}
	// The spec is the informer's own, not a copy (configs from a store
	// are never mutated): one copy of each object, not two.
	if cfg.Spec != proto.Message(&in.Spec) {
		t.Errorf("spec is a copy")
	}
	if in.Spec.Hosts[0] != "reviews.example.com" || in.Labels["app"] != "reviews" {
		t.Errorf("convert changed the cached object: hosts %v labels %v", in.Spec.Hosts, in.Labels)
	}
	for _, o := range []any{gw("a", "b"), dr("a", "b", "h"), se("a", "b", "h")} {
		c, _, ok := convert(o)
		if !ok || c.Name != "b" || c.Spec == nil {
			t.Errorf("convert(%T) = %+v, %v", o, c, ok)
		}
	}
	if _, _, ok := convert("not an object"); ok {
		t.Error("convert accepted a string")
	}
}

func TestInitialLoadThenAddUpdateDeleteOfEveryKind(t *testing.T) {
	e := newEnv(t, nil, gw("istio-system", "gw"), vs("default", "reviews", "a.example.com"),
		dr("default", "reviews", "reviews.default.svc.cluster.local"), se("default", "ext", "ext.example.com"))
	e.waitSynced()
	var got []string
	for range 4 {
		d := e.next()
		got = append(got, d.ev.String()+" "+d.cur.Key().String())
	}
	slices.Sort(got)
	want := []string{"add DestinationRule default/reviews", "add Gateway istio-system/gw",
		"add ServiceEntry default/ext", "add VirtualService default/reviews"}
	if !slices.Equal(got, want) {
		t.Fatalf("initial events = %q, want %q", got, want)
	}
	if l := e.c.List(schema.VirtualService, ""); len(l) != 1 || l[0].Source != "kube://default/reviews" {
		t.Fatalf("List = %+v", l)
	}

	// One more of each kind after sync.
	e.create(gw("default", "gw2"))
	e.create(vs("other", "r2", "b.example.com"))
	e.create(dr("other", "d2", "h2"))
	e.create(se("other", "s2", "c.example.com"))
	got = nil
	for range 4 {
		d := e.next()
		got = append(got, d.ev.String()+" "+d.cur.Key().String())
	}
	slices.Sort(got)
	want = []string{"add DestinationRule other/d2", "add Gateway default/gw2", "add ServiceEntry other/s2", "add VirtualService other/r2"}
	if !slices.Equal(got, want) {
		t.Fatalf("events after sync = %q, want %q", got, want)
	}
	if got := e.c.List(schema.VirtualService, ""); len(got) != 2 || got[0].Namespace != "default" || got[1].Namespace != "other" {
		t.Fatalf("List not sorted by namespace: %+v", got)
	}
	if got := e.c.List(schema.VirtualService, "other"); len(got) != 1 || got[0].Name != "r2" {
		t.Fatalf("List(other) = %+v", got)
	}

	upd := vs("default", "reviews", "a.example.com", "c.example.com")
	e.updateVS(upd)
	d := e.next()
	if d.ev != model.EventUpdate || len(d.old.Spec.(*networking.VirtualService).Hosts) != 1 ||
		len(d.cur.Spec.(*networking.VirtualService).Hosts) != 2 {
		t.Fatalf("update delivered %s old %v cur %v", d.ev, d.old.Spec, d.cur.Spec)
	}
	if got := e.c.Get(schema.VirtualService, "default", "reviews"); got == nil || len(got.Spec.(*networking.VirtualService).Hosts) != 2 {
		t.Fatalf("Get after update = %+v", got)
	}

	e.deleteVS("default", "reviews")
	if d := e.next(); d.ev != model.EventDelete || d.cur.Name != "reviews" || d.cur.Spec == nil {
		t.Fatalf("delete delivered %s %+v", d.ev, d.cur)
	}
	if e.c.Get(schema.VirtualService, "default", "reviews") != nil {
		t.Fatal("deleted object still in the store")
	}
	e.none()
}

func TestUpdateWithSameContentAndResyncTriggerNothing(t *testing.T) {
	e := newEnv(t, nil, vs("default", "reviews", "a.example.com"))
	e.waitSynced()
	e.next()
	// Same spec written again (a kubectl apply that changes nothing, or a
	// status write): the fake tracker keeps the content; nothing is told.
	same := vs("default", "reviews", "a.example.com")
	same.ResourceVersion = "7"
	e.updateVS(same)
	e.sentinel()
	if got := e.c.Get(schema.VirtualService, "default", "reviews"); got == nil || got.ResourceVersion != "7" {
		t.Fatalf("store not refreshed with the new resourceVersion: %+v", got)
	}

	// A resync hands the handler the same object twice: dropped before
	// it reaches the queue.
	w := e.c.watches[slices.IndexFunc(e.c.watches, func(w *watch) bool { return w.kind == schema.VirtualService })]
	obj := vs("default", "reviews", "changed.example.com")
	obj.ResourceVersion = "7"
	w.handlers().OnUpdate(obj, obj)
	e.sentinel()
	if got := e.c.Get(schema.VirtualService, "default", "reviews"); got.Spec.(*networking.VirtualService).Hosts[0] != "a.example.com" {
		t.Fatalf("resync reached the store: %v", got.Spec)
	}
}

func TestTombstoneDeletes(t *testing.T) {
	e := newEnv(t, nil, vs("default", "reviews", "a.example.com"))
	e.waitSynced()
	e.next()
	w := e.c.watches[slices.IndexFunc(e.c.watches, func(w *watch) bool { return w.kind == schema.VirtualService })]
	// The watch was down when the object was deleted: the informer hands
	// over the last state it knew, wrapped.
	w.handlers().OnDelete(cache.DeletedFinalStateUnknown{Key: "default/reviews", Obj: vs("default", "reviews", "a.example.com")})
	if d := e.next(); d.ev != model.EventDelete || d.cur.Key().String() != "VirtualService default/reviews" {
		t.Fatalf("tombstone delivered %s %s", d.ev, d.cur.Key())
	}
	if e.c.Get(schema.VirtualService, "default", "reviews") != nil {
		t.Fatal("tombstoned object still stored")
	}
	// A tombstone of something never stored tells nobody.
	w.handlers().OnDelete(cache.DeletedFinalStateUnknown{Key: "default/ghost", Obj: vs("default", "ghost")})
	e.none()
}

func TestLateHandlerIsReplayedTheStore(t *testing.T) {
	e := newEnv(t, nil, vs("default", "a", "a.example.com"), vs("default", "b", "b.example.com"))
	e.waitSynced()
	e.next()
	e.next()
	late := make(chan string, 10)
	e.c.RegisterEventHandler(schema.VirtualService, func(_, cur config.Config, ev model.Event) {
		late <- ev.String() + " " + cur.Name
	})
	e.barrier()
	if got := []string{<-late, <-late}; !slices.Equal(got, []string{"add a", "add b"}) {
		t.Fatalf("replay = %q", got)
	}
}

func TestInvalidObjectIsSkippedWithLogEventMetricAndError(t *testing.T) {
	reg := prometheus.NewRegistry()
	bad := vs("default", "bad", "bad.example.com")
	bad.Labels = map[string]string{objects.InvalidLabel: "spec.http[0].route[0].weight"}
	e := newEnv(t, func(o *Options, _ *istiofake.Clientset) { o.Registerer = reg }, bad, vs("default", "good", "good.example.com"))
	e.waitSynced()
	if d := e.next(); d.cur.Name != "good" {
		t.Fatalf("delivered %s, want only the valid object", d.cur.Key())
	}
	e.none()
	if e.c.Get(schema.VirtualService, "default", "bad") != nil {
		t.Fatal("invalid object is served")
	}
	errs := e.c.ConfigErrors()
	if len(errs) != 1 || errs[0].Field != "spec.http[0].route[0].weight" || errs[0].Key.Name != "bad" || errs[0].Source != "kube://default/bad" {
		t.Fatalf("ConfigErrors = %v", errs)
	}
	ev := <-e.rec.Events
	for _, want := range []string{"Warning", EventReasonInvalid, "VirtualService default/bad", "spec.http[0].route[0].weight", "not served"} {
		if !strings.Contains(ev, want) {
			t.Errorf("event %q lacks %q", ev, want)
		}
	}
	logs := e.logs.String()
	for _, want := range []string{"invalid config not served", "namespace=default", "name=bad", "field=spec.http[0].route[0].weight"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	var m dto.Metric
	if err := e.c.rejected.WithLabelValues("VirtualService").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		n := m.GetCounter().GetValue()
		t.Errorf("rejected metric = %v, want 1", n)
	}

	// A valid object broken by an update keeps its last valid version.
	broken := vs("default", "good", "changed.example.com")
	broken.Labels = map[string]string{objects.InvalidLabel: "spec.hosts[0]"}
	e.updateVS(broken)
	e.sentinel()
	if got := e.c.Get(schema.VirtualService, "default", "good"); got == nil || got.Spec.(*networking.VirtualService).Hosts[0] != "good.example.com" {
		t.Fatalf("last valid version not kept: %+v", got)
	}
	if ev := <-e.rec.Events; !strings.Contains(ev, "previous valid version is still served") {
		t.Errorf("event %q does not say the old version is kept", ev)
	}
	// Fixing it delivers the fix and clears the error; deleting the
	// never-valid one clears its error without telling handlers.
	e.updateVS(vs("default", "good", "fixed.example.com"))
	if d := e.next(); d.ev != model.EventUpdate || d.cur.Spec.(*networking.VirtualService).Hosts[0] != "fixed.example.com" ||
		d.old.Spec.(*networking.VirtualService).Hosts[0] != "good.example.com" {
		t.Fatalf("fix delivered %s %v", d.ev, d.cur.Spec)
	}
	e.deleteVS("default", "bad")
	e.sentinel()
	if errs := e.c.ConfigErrors(); len(errs) != 0 {
		t.Fatalf("errors left: %v", errs)
	}
}

func TestRealValidationRejectsNegativeWeight(t *testing.T) {
	bad := vs("default", "weights", "w.example.com")
	bad.Spec.Http[0].Route[0].Weight = -5
	e := newEnv(t, func(o *Options, _ *istiofake.Clientset) { o.validate = validation.Validate }, bad)
	e.waitSynced()
	e.none()
	errs := e.c.ConfigErrors()
	if len(errs) == 0 || !strings.Contains(errs[0].Field, "weight") {
		t.Fatalf("ConfigErrors = %v, want one naming the weight", errs)
	}
}

func TestForbiddenNamespaceIsReportedAndOthersServed(t *testing.T) {
	e := newEnv(t, func(o *Options, client *istiofake.Clientset) {
		o.Namespaces = []string{"allowed", "secret"}
		client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "secret" {
				return false, nil, nil
			}
			gr := k8sschema.GroupResource{Group: "networking.istio.io", Resource: a.GetResource().Resource}
			return true, nil, apierrors.NewForbidden(gr, "", fmt.Errorf("RBAC: access denied"))
		})
	}, vs("allowed", "ok", "ok.example.com"), vs("secret", "hidden", "h.example.com"))
	e.waitSynced()
	if d := e.next(); d.cur.Key().String() != "VirtualService allowed/ok" {
		t.Fatalf("delivered %s", d.cur.Key())
	}
	e.none()
	errs := e.c.ConfigErrors()
	if len(errs) != len(schema.Kinds()) {
		t.Fatalf("want one error per kind in the forbidden namespace, got %v", errs)
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), `namespace "secret"`) || !strings.Contains(err.Error(), ".networking.istio.io") {
			t.Errorf("error does not name namespace and resource: %v", err)
		}
	}
	if !strings.Contains(e.logs.String(), "kubernetes watch forbidden") {
		t.Errorf("no log line for the forbidden watch:\n%s", e.logs.String())
	}
}

func TestNewRejectsMissingClient(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Client") {
		t.Fatalf("New without client: %v", err)
	}
}
