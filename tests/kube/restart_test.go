package kube

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// The API server restarts mid-test: watches resume, changes made after the
// restart are seen, and nothing is lost, duplicated or left stale: the
// store ends up holding exactly what the API server holds.
func TestAPIServerRestartResumesWatches(t *testing.T) {
	e := newEnv(t, "restart")
	gw := e.gateway("gw-0")
	host := e.host("reviews")
	cluster := model.ClusterName(9080, "", host)
	e.createGateway("gw")
	e.createVS(e.virtualService("a", "a.example.com", host, ""))
	e.createVS(e.virtualService("b", "b.example.com", host, ""))
	e.createService("reviews")
	e.applySlice("reviews", "reviews-1", ep{"10.3.0.1", "", true})
	waitFor(t, gw, "initial config", func(s adsc.State) bool {
		return virtualHost(s, "a.example.com", cluster) && virtualHost(s, "b.example.com", cluster) && endpointCount(s, cluster) == 1
	})

	e.c.RestartAPIServer(t)

	// Changes after the restart: one deleted, one added, endpoints moved.
	e.must(e.istio.NetworkingV1().VirtualServices(e.ns).Delete(ctx, "a", metav1.DeleteOptions{}))
	e.createVS(e.virtualService("c", "c.example.com", host, ""))
	e.applySlice("reviews", "reviews-1", ep{"10.3.0.1", "", true}, ep{"10.3.0.2", "", true})
	waitFor(t, gw, "changes after the restart", func(s adsc.State) bool {
		return !virtualHost(s, "a.example.com", "") && virtualHost(s, "b.example.com", cluster) &&
			virtualHost(s, "c.example.com", cluster) && endpointCount(s, cluster) == 2
	})

	// The store holds exactly what the API server holds.
	var got []config.Key
	for _, k := range schema.Kinds() {
		for _, c := range e.server.Store().List(k, e.ns) {
			got = append(got, c.Key())
		}
	}
	want := []config.Key{
		{Kind: schema.Gateway, Namespace: e.ns, Name: "gw"},
		{Kind: schema.VirtualService, Namespace: e.ns, Name: "b"},
		{Kind: schema.VirtualService, Namespace: e.ns, Name: "c"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("store = %v\nwant    %v", got, want)
	}
	var hosts []string
	for _, s := range e.server.ServiceRegistry().Services() {
		hosts = append(hosts, s.Hostname)
	}
	if !slices.Equal(hosts, []string{host}) {
		t.Fatalf("registry services = %v, want [%s]", hosts, host)
	}
}
