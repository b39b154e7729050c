package crdclient

import (
	"fmt"
	"slices"
	"testing"

	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
	"github.com/wayfinder-dev/wayfinder/pkg/test/objects"
)

func newListController(tb testing.TB) *Controller {
	tb.Helper()
	c, err := New(Options{Client: kclienttest.Istio(istiofake.NewSimpleClientset()), validate: func(config.Config) error { return nil }})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func vsConfig(ns, name string) config.Config {
	c := objects.VirtualService(ns, name, name+".example.com")
	c.ResourceVersion = "1"
	return c
}

// TestListFollowsEveryEvent: the sorted list is rebuilt lazily, so a List
// after any sequence of adds and deletes must still see exactly the
// stored objects, sorted by namespace then name.
func TestListFollowsEveryEvent(t *testing.T) {
	c := newListController(t)
	want := map[string]bool{}
	for i := range 50 {
		ns, name := fmt.Sprintf("ns%d", i%3), fmt.Sprintf("vs%02d", 49-i)
		c.apply(model.EventAdd, vsConfig(ns, name), nil)
		want[ns+"/"+name] = true
		if i%7 == 0 {
			del := vsConfig(ns, name)
			c.apply(model.EventDelete, del, nil)
			delete(want, ns+"/"+name)
		}
		if i%5 == 0 {
			checkList(t, c, want)
		}
	}
	checkList(t, c, want)
	if got := c.List(schema.VirtualService, "ns1"); len(got) == 0 || slices.ContainsFunc(got, func(c config.Config) bool { return c.Namespace != "ns1" }) {
		t.Fatalf("List(ns1) = %d objects, some of another namespace", len(got))
	}
	if got := c.List(schema.Gateway, ""); len(got) != 0 {
		t.Fatalf("List(Gateway) = %d objects, want none", len(got))
	}
}

func checkList(t *testing.T, c *Controller, want map[string]bool) {
	t.Helper()
	got := c.List(schema.VirtualService, "")
	if len(got) != len(want) {
		t.Fatalf("List = %d objects, want %d", len(got), len(want))
	}
	for i, obj := range got {
		if !want[obj.Namespace+"/"+obj.Name] {
			t.Fatalf("List has %s/%s, which was deleted", obj.Namespace, obj.Name)
		}
		if i > 0 && compareConfigs(got[i-1], obj) >= 0 {
			t.Fatalf("List not sorted at %d: %s/%s after %s/%s", i, obj.Namespace, obj.Name, got[i-1].Namespace, got[i-1].Name)
		}
	}
}

// BenchmarkInitialList is the first sync of N VirtualServices: N add
// events, then the push context's List.
func BenchmarkInitialList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cfgs := make([]config.Config, n)
			for i := range cfgs {
				cfgs[i] = vsConfig(fmt.Sprintf("ns%d", i%50), fmt.Sprintf("vs%05d", i))
			}
			for b.Loop() {
				c := newListController(b)
				for _, cfg := range cfgs {
					c.apply(model.EventAdd, cfg, nil)
				}
				if got := len(c.List(schema.VirtualService, "")); got != n {
					b.Fatalf("List = %d, want %d", got, n)
				}
			}
		})
	}
}
