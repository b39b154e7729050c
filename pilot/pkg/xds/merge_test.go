package xds

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/model"
	"github.com/wayfinder-dev/wayfinder/pkg/config"
	"github.com/wayfinder-dev/wayfinder/pkg/config/schema"
)

// mergeRequests extends its own batch in place but gives what
// model.PushRequest.Merge gives, and never modifies a caller's request.
func TestMergeRequestsMatchesMerge(t *testing.T) {
	s := &DiscoveryServer{log: testLogger(t)}
	var reqs []*model.PushRequest
	for i := range 50 {
		reqs = append(reqs, &model.PushRequest{
			Full:           i == 7,
			ConfigsUpdated: map[config.Key]struct{}{{Kind: schema.VirtualService, Namespace: "default", Name: fmt.Sprint("vs-", i%20)}: {}},
			Reasons:        map[string]int{fmt.Sprint("r", i%3): 1},
			Start:          t0.Add(time.Duration(50-i) * time.Millisecond),
		})
	}
	var want, got *model.PushRequest
	for _, r := range reqs {
		want = want.Merge(r)
		got = s.mergeRequests(got, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	for i, r := range reqs {
		if len(r.ConfigsUpdated) != 1 || len(r.Reasons) != 1 {
			t.Errorf("request %d was modified: %+v", i, r)
		}
	}
	// A fired batch is never extended again.
	s.fire(got) // not synced: only drops the batch
	before := len(got.ConfigsUpdated)
	if next := s.mergeRequests(got, reqs[0]); next == got || len(got.ConfigsUpdated) != before {
		t.Error("a fired batch was extended in place")
	}
}
