package model

import (
	"testing"

	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/mesh"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// A push context's mesh config is the snapshot it was made with, kept by
// the views and partial pushes made from it, and istiod's defaults when
// none was given.
func TestPushContextMesh(t *testing.T) {
	if m := NewPushContext(listStore{}).Mesh(); m == nil || m.Mesh.GetRootNamespace() != mesh.DefaultRootNamespace {
		t.Fatalf("default push context Mesh() = %v, want istiod's defaults", m)
	}
	if m := (&PushContext{}).Mesh(); m == nil {
		t.Fatal("zero push context Mesh() is nil")
	}
	cfg, err := mesh.Parse(mesh.FileSource("mesh.yaml"), []byte("rootNamespace: meshroot\n"))
	if err != nil {
		t.Fatal(err)
	}
	ps := NewScopedPushContext(Scoping{Mesh: cfg}, listStore{})
	for name, got := range map[string]*mesh.Config{
		"push context": ps.Mesh(),
		"ForProxy":     ps.ForProxy(&Proxy{Namespace: "ns"}).Mesh(),
		"WithRouting":  ps.WithRouting(listStore{}).Mesh(),
	} {
		if got != cfg {
			t.Errorf("%s: Mesh() = %p, want the snapshot %p", name, got, cfg)
		}
	}
}

// A request that names no object (a mesh config change, a secret push)
// means everything, and stays so when merged with one that names some: it
// must not become a push of those objects alone.
func TestPushRequestMergeKeepsEverything(t *testing.T) {
	vs := &PushRequest{Full: true, ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.VirtualService, Name: "a"}: {}}}
	meshChange := &PushRequest{Full: true, Reasons: map[string]int{"mesh-config": 1}}
	for _, m := range []*PushRequest{vs.Merge(meshChange), meshChange.Merge(vs)} {
		if len(m.ConfigsUpdated) != 0 || !m.Full || m.Reasons["mesh-config"] != 1 {
			t.Errorf("merged %+v, want a full push of everything", m)
		}
	}
	if len(vs.ConfigsUpdated) != 1 {
		t.Errorf("merge modified its input: %+v", vs)
	}
}
