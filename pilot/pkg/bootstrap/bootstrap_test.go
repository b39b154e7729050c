package bootstrap

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/memory"
	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSource is a fixed store that reports it has synced once told to,
// records handler registrations, and reports one problem.
type fakeSource struct {
	*memory.Store
	synced     atomic.Bool
	registered []schema.Kind
	ran        atomic.Bool
	problem    string
}

func (f *fakeSource) RegisterEventHandler(k schema.Kind, _ model.EventHandler) {
	f.registered = append(f.registered, k)
}
func (f *fakeSource) Run(ctx context.Context) { f.ran.Store(true); <-ctx.Done() }
func (f *fakeSource) HasSynced() bool         { return f.synced.Load() }
func (f *fakeSource) ConfigErrors() []*config.Error {
	return []*config.Error{{Source: f.problem, Message: "problem in " + f.problem}}
}

func vs(ns, name string) config.Config { return objects.VirtualService(ns, name, name) }

func TestAggregateStoreMergesSources(t *testing.T) {
	a := &fakeSource{Store: memory.New([]config.Config{vs("b", "x"), vs("a", "shared")}), problem: "kube://b"}
	b := &fakeSource{Store: memory.New([]config.Config{vs("a", "y"), vs("a", "shared")}), problem: "kube://a"}
	agg := newAggregateStore([]model.ConfigStoreController{a, b})

	var got []string
	for _, c := range agg.List(schema.VirtualService, "") {
		got = append(got, c.Namespace+"/"+c.Name)
	}
	if strings.Join(got, ",") != "a/shared,a/shared,a/y,b/x" {
		t.Errorf("List = %v, want both sources sorted by namespace and name", got)
	}
	if l := agg.List(schema.VirtualService, "b"); len(l) != 1 || l[0].Name != "x" {
		t.Errorf("List(b) = %v", l)
	}
	if c := agg.Get(schema.VirtualService, "a", "y"); c == nil || c.Name != "y" {
		t.Errorf("Get from the second source = %v", c)
	}
	if agg.Get(schema.Gateway, "a", "y") != nil {
		t.Error("Get of a missing object returned one")
	}

	agg.RegisterEventHandler(schema.Gateway, func(_, _ config.Config, _ model.Event) {})
	if len(a.registered) != 1 || len(b.registered) != 1 {
		t.Errorf("handler registered on %d and %d sources, want both", len(a.registered), len(b.registered))
	}

	if agg.HasSynced() {
		t.Error("synced before any source")
	}
	a.synced.Store(true)
	if agg.HasSynced() {
		t.Error("synced before every source")
	}
	b.synced.Store(true)
	if !agg.HasSynced() {
		t.Error("not synced after every source")
	}

	errs := agg.ConfigErrors()
	if len(errs) != 2 || errs[0].Source != "kube://a" || errs[1].Source != "kube://b" {
		t.Errorf("ConfigErrors = %v, want both sources' sorted by source", errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { agg.Run(ctx); close(done) }()
	cancel()
	<-done
	if !a.ran.Load() || !b.ran.Load() {
		t.Error("Run did not run every source")
	}
}

func TestOptionsAllowOneConfigSource(t *testing.T) {
	cases := []struct {
		opts Options
		want string
	}{
		{Options{ConfigDir: "x", Kubeconfig: "k"}, "--config-dir and --kubeconfig are both set"},
		{Options{ConfigDir: "x", WatchNamespaces: []string{"a"}}, "--watch-namespaces applies to Kubernetes mode only"},
		{Options{ConfigDir: "x"}, ""},
		{Options{Kubeconfig: "k", WatchNamespaces: []string{"a"}}, ""},
	}
	for _, c := range cases {
		err := c.opts.validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("validate(%+v) = %v, want %q", c.opts, err, c.want)
		}
	}
	if _, err := NewServer(Options{ConfigDir: "x", Kubeconfig: "k"}); err == nil || !strings.Contains(err.Error(), "choose") && !strings.Contains(err.Error(), "drop one") {
		t.Errorf("NewServer with both sources: %v", err)
	}
	_, err := NewServer(Options{Kubeconfig: "/does/not/exist/kubeconfig"})
	if err == nil || !strings.Contains(err.Error(), "/does/not/exist/kubeconfig") {
		t.Errorf("NewServer with a missing kubeconfig: %v, want an error naming it", err)
	}
}
