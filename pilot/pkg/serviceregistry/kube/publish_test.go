package kube

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient/kclienttest"
)

// Services added, replaced and removed in any order leave the snapshot
// that sorting every Service would give, each change made in place.
func TestPublishKeepsTheSnapshotSorted(t *testing.T) {
	c, err := New(Options{Client: kclienttest.Kube(fake.NewClientset())})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 3000 {
		key := fmt.Sprintf("ns%d/svc%d", rng.IntN(3), rng.IntN(40))
		prev := c.byKey[key]
		var cur *model.Service
		if rng.IntN(4) > 0 {
			ns, name, _ := strings.Cut(key, "/")
			cur = &model.Service{Hostname: name + "." + ns + ".svc.cluster.local"}
		}
		if cur == nil {
			delete(c.byKey, key)
		} else {
			c.byKey[key] = cur
		}
		c.publish(prev, cur)

		got := c.Services()
		want := make([]*model.Service, 0, len(c.byKey))
		for _, s := range c.byKey {
			want = append(want, s)
		}
		slices.SortFunc(want, func(a, b *model.Service) int { return cmp.Compare(a.Hostname, b.Hostname) })
		if !slices.Equal(got, want) {
			t.Fatalf("step %d (%s): snapshot has %d services, not the %d sorted ones", step, key, len(got), len(want))
		}
	}
}

// A snapshot that lost track of a Service is rebuilt from every Service.
func TestPublishStartsOverWhenTheOldServiceIsMissing(t *testing.T) {
	c, err := New(Options{Client: kclienttest.Kube(fake.NewClientset())})
	if err != nil {
		t.Fatal(err)
	}
	a := &model.Service{Hostname: "a.ns.svc.cluster.local"}
	b := &model.Service{Hostname: "b.ns.svc.cluster.local"}
	c.byKey["ns/a"], c.byKey["ns/b"] = a, b
	stray := &model.Service{Hostname: "b.ns.svc.cluster.local"}
	c.publish(stray, b) // stray was never published
	if got := c.Services(); !slices.Equal(got, []*model.Service{a, b}) {
		t.Fatalf("snapshot = %v, want a and b", got)
	}
}
