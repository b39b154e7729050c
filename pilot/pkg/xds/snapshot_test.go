package xds

import (
	"slices"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

func edsCluster(name string, timeout time.Duration) *cluster.Cluster {
	return &cluster.Cluster{Name: name, ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource}, ConnectTimeout: durationpb.New(timeout)}
}

// validate checks and interns resources with a fresh interner.
func validate[T types.Resource](t int, in []T) ([]*snapshot.Resource, []*config.Error) {
	return snapshot.Prepare(snapshot.NewInterner(nil), t, "", in)
}

func TestVersionIsAHashOfContent(t *testing.T) {
	a := []*cluster.Cluster{edsCluster("a", time.Second), edsCluster("b", time.Second)}
	reversed := []*cluster.Cluster{edsCluster("b", time.Second), edsCluster("a", time.Second)}
	changed := []*cluster.Cluster{edsCluster("a", 2*time.Second), edsCluster("b", time.Second)}
	ver := func(cs []*cluster.Cluster) string {
		v, errs := validate(snapshot.CDS, cs)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return snapshot.NewTypeSet(v).Version
	}
	if ver(a) != ver(reversed) {
		t.Error("version depends on the order resources were generated in")
	}
	if ver(a) == ver(changed) {
		t.Error("a changed timeout kept the version")
	}
	if ver(a) == ver(a[:1]) {
		t.Error("removing a resource kept the version")
	}
	if ver(nil) == ver(a) || ver(nil) != ver([]*cluster.Cluster{}) {
		t.Error("the empty set has no stable version of its own")
	}
}

func TestValidateDropsInvalidUnnamedAndDuplicateResources(t *testing.T) {
	in := []*cluster.Cluster{edsCluster("ok", time.Second), invalidCluster("bad"), edsCluster("", time.Second), edsCluster("ok", 2*time.Second)}
	got, errs := validate(snapshot.CDS, in)
	if len(got) != 1 || got[0].Name != "ok" {
		t.Fatalf("kept %v, want only the first \"ok\"", got)
	}
	var kept cluster.Cluster
	if err := got[0].Any.UnmarshalTo(&kept); err != nil || !proto.Equal(&kept, in[0]) {
		t.Errorf("kept encoding decodes to %v (%v), want the first \"ok\"", &kept, err)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		"generated cds bad: fails Envoy validation and is not sent: invalid Cluster.LbPolicy: value must be one of the defined enum values",
		"generated cds #2: has no name",
		"generated cds ok: is generated twice; the second is dropped",
	}
	if !slices.Equal(msgs, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewSnapshotRejectsInconsistentResources(t *testing.T) {
	valid, errs := validate(snapshot.CDS, []*cluster.Cluster{edsCluster("c", time.Second)})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := snapshot.NewView(snapshot.NewTypeSet(valid), nil, nil, nil, nil).Consistent(); err == nil {
		t.Error("a cluster without its load assignment made a consistent view")
	}
}
