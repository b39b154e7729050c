package xds

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/xds/snapshot"
)

func nameSet(names ...string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

// A named request for the names answered, against a set of the same
// version, is not answered, and its (equal) name set becomes the record so
// later checks compare by identity; a smaller set is never recorded, so a
// name dropped and asked for again is still known as answered.
func TestSotwShouldRespondNamedShortcut(t *testing.T) {
	a := &snapshot.Resource{Name: "a", Hash: "1"}
	b := &snapshot.Resource{Name: "b", Hash: "2"}
	sent := snapshot.NewTypeSet([]*snapshot.Resource{a, b})
	same := snapshot.NewTypeSet([]*snapshot.Resource{a, b}) // a new push, same content
	changed := snapshot.NewTypeSet([]*snapshot.Resource{a, {Name: "b", Hash: "3"}})
	ts := &typeStatus{typeURL: resource.EndpointType, sent: sent, sentNames: nameSet("a", "b"), sentVersion: sent.Version}
	req := &discovery.DiscoveryRequest{VersionInfo: sent.Version}

	equal := nameSet("a", "b")
	if sotwShouldRespond(ts, req, same, false, equal) {
		t.Error("answered a request for the same names and content")
	}
	if !sameMap(ts.sentNames, equal) {
		t.Error("an equal name set was not kept as the record")
	}
	if !sotwShouldRespond(ts, req, changed, false, equal) {
		t.Error("a changed resource was not answered")
	}
	subset := nameSet("a")
	if sotwShouldRespond(ts, req, same, false, subset) {
		t.Error("answered a request for fewer names with nothing changed")
	}
	if sameMap(ts.sentNames, subset) {
		t.Error("a smaller name set replaced the record")
	}
	if !sotwShouldRespond(ts, req, same, false, nameSet("a", "b", "c")) {
		t.Error("a newly subscribed name was not answered")
	}
}
