package push

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
	"github.com/wayfinder-dev/wayfinder/pkg/debounce"
)

// A full push takes the mesh config in force and its rootNamespace,
// unless the options name a root namespace (--root-namespace wins).
func TestPushScopingFollowsTheMeshConfig(t *testing.T) {
	cfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte("rootNamespace: meshroot\n"))
	if err != nil {
		t.Fatal(err)
	}
	current := func() *mesh.Config { return cfg }
	sc := New(Options{Mesh: current, Scoping: model.Scoping{DomainSuffix: "example.internal"}}).pushScoping()
	if sc.Mesh != cfg || sc.RootNamespace != "meshroot" || sc.DomainSuffix != "example.internal" {
		t.Errorf("from the mesh config: %+v", sc)
	}
	sc = New(Options{Mesh: current, Scoping: model.Scoping{RootNamespace: "flag"}}).pushScoping()
	if sc.Mesh != cfg || sc.RootNamespace != "flag" {
		t.Errorf("with an explicit root namespace: %+v", sc)
	}
	if sc := New(Options{}).pushScoping(); sc.Mesh != nil || sc.RootNamespace != "" {
		t.Errorf("without a mesh config: %+v (the push context fills istiod's defaults)", sc)
	}
}

// The debouncer's in-place merge keeps "everything" too: a mesh config
// change merged with a VirtualService edit is not a routing-only push,
// which would keep the last push's mesh config and root namespace.
func TestMergeKeepsAMeshChangeAFullPush(t *testing.T) {
	q := NewQueue(debounce.Options{}, debounce.Options{}, func(*model.PushRequest) {})
	vs := func(name string) *model.PushRequest {
		return &model.PushRequest{Full: true, ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.VirtualService, Name: name}: {}}, Reasons: map[string]int{"config": 1}}
	}
	meshChange := &model.PushRequest{Full: true, Reasons: map[string]int{"mesh-config": 1}}
	for name, seq := range map[string][]*model.PushRequest{
		"mesh last":   {vs("a"), vs("b"), meshChange},
		"mesh first":  {meshChange, vs("a"), vs("b")},
		"mesh middle": {vs("a"), meshChange, vs("b")},
	} {
		var got *model.PushRequest
		for _, r := range seq {
			got = q.merge(got, r)
		}
		if routingOnly(got) || len(got.ConfigsUpdated) != 0 || got.Reasons["mesh-config"] != 1 {
			t.Errorf("%s: merged %+v, want a full push of everything", name, got)
		}
		q.fireConfig(got) // a new batch for the next sequence
	}
	if len(meshChange.ConfigsUpdated) != 0 || len(vs("a").ConfigsUpdated) != 1 {
		t.Error("merge modified its input")
	}
}
