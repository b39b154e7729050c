package xds

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
)

func edsCluster(name string, timeout time.Duration) *cluster.Cluster {
	return &cluster.Cluster{Name: name, ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource}, ConnectTimeout: durationpb.New(timeout)}
}

func TestVersionIsAHashOfContent(t *testing.T) {
	a := []*cluster.Cluster{edsCluster("a", time.Second), edsCluster("b", time.Second)}
	reversed := []*cluster.Cluster{edsCluster("b", time.Second), edsCluster("a", time.Second)}
	changed := []*cluster.Cluster{edsCluster("a", 2*time.Second), edsCluster("b", time.Second)}
	ver := func(cs []*cluster.Cluster) string {
		v, errs := validate(resource.ClusterType, cs)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return version(v)
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
	got, errs := validate(resource.ClusterType, in)
	if len(got) != 1 || got[0].name != "ok" || got[0].res != in[0] {
		t.Errorf("kept %v, want only the first \"ok\" (the same pointer, not a copy)", got)
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
	cs := []*cluster.Cluster{edsCluster("with-cla", time.Second), edsCluster("no-cla", time.Second)}
	es := []*endpoint.ClusterLoadAssignment{{ClusterName: "with-cla"}, {ClusterName: "unused"}}
	clusters, endpoints, errs := serviceResources(ServiceResources{Clusters: cs, Endpoints: es,
		Errors: []*config.Error{{Message: "from the translator"}}})
	if got := names(clusters.Items); !slices.Equal(got, []string{"with-cla"}) {
		t.Errorf("clusters %v", got)
	}
	if got := names(endpoints.Items); !slices.Equal(got, []string{"with-cla"}) {
		t.Errorf("endpoints %v", got)
	}
	if len(errs) != 3 || errs[0].Message != "from the translator" {
		t.Errorf("errors %v: want the translator's, then the dropped cluster and load assignment", errs)
	}

	ls := []*listener.Listener{httpListener(80), listenerWithRDS("0.0.0.0_81", 81, "missing")}
	rs := []*route.RouteConfiguration{{Name: model.RouteName(80)}, {Name: "unused"}}
	listeners, routes, errs := gatewayResources(GatewayResources{Listeners: ls, Routes: rs})
	if got := names(listeners.Items); !slices.Equal(got, []string{"0.0.0.0_80"}) {
		t.Errorf("listeners %v", got)
	}
	if got := names(routes.Items); !slices.Equal(got, []string{"http.80"}) {
		t.Errorf("routes %v", got)
	}
	if len(errs) != 2 {
		t.Errorf("errors %v, want the dangling listener and the unused route", errs)
	}
	snap, err := newSnapshot(clusters, endpoints, listeners, routes)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range servedTypes {
		if snap.GetVersion(typ) == "" {
			t.Errorf("%s has no version", shortType(typ))
		}
	}
}

func TestNewSnapshotRejectsInconsistentResources(t *testing.T) {
	valid, errs := validate(resource.ClusterType, []*cluster.Cluster{edsCluster("c", time.Second)})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	clusters := toResources(valid)
	none := toResources(nil)
	if _, err := newSnapshot(clusters, none, none, none); err == nil {
		t.Error("a cluster without its load assignment made a consistent snapshot")
	}
}

// names lists a resource group's names, sorted.
func names(items map[string]types.ResourceWithTTL) []string {
	return slices.Sorted(maps.Keys(items))
}
