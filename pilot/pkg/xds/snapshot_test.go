package xds

import (
	"slices"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

func edsCluster(name string, timeout time.Duration) *cluster.Cluster {
	return &cluster.Cluster{Name: name, ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource}, ConnectTimeout: durationpb.New(timeout)}
}

// validate checks and interns resources with a fresh interner.
func validate[T types.Resource](t int, in []T) ([]*res, []*config.Error) {
	return prepare(newInterner(nil), t, "", in)
}

func TestVersionIsAHashOfContent(t *testing.T) {
	a := []*cluster.Cluster{edsCluster("a", time.Second), edsCluster("b", time.Second)}
	reversed := []*cluster.Cluster{edsCluster("b", time.Second), edsCluster("a", time.Second)}
	changed := []*cluster.Cluster{edsCluster("a", 2*time.Second), edsCluster("b", time.Second)}
	ver := func(cs []*cluster.Cluster) string {
		v, errs := validate(cdsIdx, cs)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return newTypeSet(v).version
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
	got, errs := validate(cdsIdx, in)
	if len(got) != 1 || got[0].name != "ok" {
		t.Fatalf("kept %v, want only the first \"ok\"", got)
	}
	var kept cluster.Cluster
	if err := got[0].any.UnmarshalTo(&kept); err != nil || !proto.Equal(&kept, in[0]) {
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

func TestPruneKeepsSnapshotsConsistent(t *testing.T) {
	in := newInterner(nil)
	cs := []*cluster.Cluster{edsCluster("with-cla", time.Second), edsCluster("no-cla", time.Second)}
	es := []*endpoint.ClusterLoadAssignment{{ClusterName: "with-cla"}, {ClusterName: "unused"}}
	clusters, endpoints, errs := serviceResources(in, "", ServiceResources{Clusters: cs, Endpoints: es,
		Errors: []*config.Error{{Message: "from the translator"}}})
	if got := clusters.names(); !slices.Equal(got, []string{"with-cla"}) {
		t.Errorf("clusters %v", got)
	}
	if got := endpoints.names(); !slices.Equal(got, []string{"with-cla"}) {
		t.Errorf("endpoints %v", got)
	}
	if len(errs) != 3 || errs[0].Message != "from the translator" {
		t.Errorf("errors %v: want the translator's, then the dropped cluster and load assignment", errs)
	}

	ls := []*listener.Listener{httpListener(80), listenerWithRDS("0.0.0.0_81", 81, "missing")}
	rs := []*route.RouteConfiguration{{Name: model.RouteName(80)}, {Name: "unused"}}
	listeners, routes, secrets, errs := gatewayResources(in, "g", GatewayResources{Listeners: ls, Routes: rs})
	if got := listeners.names(); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners %v", got)
	}
	if got := routes.names(); !slices.Equal(got, []string{"http.80"}) {
		t.Errorf("routes %v", got)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want the dangling listener and the unused route", errs)
	}
	v := newView(clusters, endpoints, listeners, routes, secrets)
	if err := v.consistent(); err != nil {
		t.Fatal(err)
	}
	for _, typ := range servedTypes {
		if v.set(typ).version == "" {
			t.Errorf("%s has no version", shortType(typ))
		}
	}
}

func TestNewSnapshotRejectsInconsistentResources(t *testing.T) {
	valid, errs := validate(cdsIdx, []*cluster.Cluster{edsCluster("c", time.Second)})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := newView(newTypeSet(valid), nil, nil, nil, nil).consistent(); err == nil {
		t.Error("a cluster without its load assignment made a consistent view")
	}
}
